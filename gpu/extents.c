/* First-fit extents (extents.h): the free ones in an array sorted by offset, merged with their
 * neighbours when given back. A ring holds at most a few hundred programs, so a linear walk is
 * cheaper than any tree. */
#include <stdlib.h>
#include <string.h>

#include "geom/base.h"
#include "extents.h"

int tdm_extents_init(tdm_extents *x, size_t total)
{
    memset(x, 0, sizeof *x);
    total -= total % TDM_EXTENTS_ALIGN;
    if (total == 0) return TDM_EINVAL;
    x->free = malloc(16 * sizeof *x->free);
    if (!x->free) return TDM_ENOMEM;
    x->cap_free = 16;
    x->free[0] = (struct tdm_extent){0, total};
    x->n_free = 1;
    x->total = x->free_bytes = total;
    return TDM_OK;
}

void tdm_extents_destroy(tdm_extents *x)
{
    free(x->free);
    memset(x, 0, sizeof *x);
}

size_t tdm_extents_length(size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - (TDM_EXTENTS_ALIGN - 1)) return 0;
    return (bytes + TDM_EXTENTS_ALIGN - 1) / TDM_EXTENTS_ALIGN * TDM_EXTENTS_ALIGN;
}

size_t tdm_extents_alloc(tdm_extents *x, size_t bytes)
{
    size_t len = tdm_extents_length(bytes);
    if (len == 0) return SIZE_MAX;
    for (size_t i = 0; i < x->n_free; i++) {
        struct tdm_extent *f = &x->free[i];
        if (f->len < len) continue;
        size_t off = f->off;
        if (f->len == len) {
            memmove(f, f + 1, (x->n_free - i - 1) * sizeof *f);
            x->n_free--;
        } else {
            f->off += len;
            f->len -= len;
        }
        x->free_bytes -= len;
        return off;
    }
    return SIZE_MAX;
}

int tdm_extents_free(tdm_extents *x, size_t off, size_t bytes)
{
    size_t len = tdm_extents_length(bytes);
    if (len == 0 || off % TDM_EXTENTS_ALIGN || off > x->total || len > x->total - off) return TDM_EINVAL;
    /* i: the first free extent past off */
    size_t i = 0;
    while (i < x->n_free && x->free[i].off <= off) i++;
    if (i > 0 && x->free[i - 1].off + x->free[i - 1].len > off) return TDM_EINVAL; /* overlaps the one before */
    if (i < x->n_free && off + len > x->free[i].off) return TDM_EINVAL;             /* or the one after */
    int joins_before = i > 0 && x->free[i - 1].off + x->free[i - 1].len == off;
    int joins_after = i < x->n_free && off + len == x->free[i].off;
    if (joins_before && joins_after) {
        x->free[i - 1].len += len + x->free[i].len;
        memmove(&x->free[i], &x->free[i + 1], (x->n_free - i - 1) * sizeof *x->free);
        x->n_free--;
    } else if (joins_before) {
        x->free[i - 1].len += len;
    } else if (joins_after) {
        x->free[i].off = off;
        x->free[i].len += len;
    } else {
        if (x->n_free == x->cap_free) {
            struct tdm_extent *g = realloc(x->free, 2 * x->cap_free * sizeof *g);
            if (!g) return TDM_ENOMEM;
            x->free = g;
            x->cap_free *= 2;
        }
        memmove(&x->free[i + 1], &x->free[i], (x->n_free - i) * sizeof *x->free);
        x->free[i] = (struct tdm_extent){off, len};
        x->n_free++;
    }
    x->free_bytes += len;
    return TDM_OK;
}
