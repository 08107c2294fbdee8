#include "owners.h"

#include <stdlib.h>
#include <string.h>

#include "../geom/base.h"

int tdm_owners_find(const tdm_owners *o, uint32_t tenant)
{
    for (uint32_t i = 0; i < o->n; i++)
        if (o->v[i].tenant == tenant) return (int)i;
    return -1;
}

int tdm_owners_add(tdm_owners *o, uint32_t tenant, const char *name)
{
    tdm_owner *v = realloc(o->v, sizeof *v * (o->n + 1));
    if (!v) return TDM_ENOMEM;
    o->v = v;
    size_t len = strlen(name) + 1;
    char *copy = malloc(len);
    if (!copy) return TDM_ENOMEM;
    memcpy(copy, name, len);
    v[o->n++] = (tdm_owner){tenant, copy};
    return 0;
}

void tdm_owners_remove(tdm_owners *o, uint32_t tenant)
{
    int i = tdm_owners_find(o, tenant);
    if (i < 0) return;
    free(o->v[i].name);
    memmove(&o->v[i], &o->v[i + 1], sizeof *o->v * (o->n - (uint32_t)i - 1));
    o->n--;
}

void tdm_owners_clear(tdm_owners *o)
{
    for (uint32_t i = 0; i < o->n; i++) free(o->v[i].name);
    free(o->v);
    o->v = NULL;
    o->n = 0;
}

static void put32(uint8_t **p, uint32_t v)
{
    memcpy(*p, &v, 4); /* little-endian hosts only, as the rest of the data directory */
    *p += 4;
}

int tdm_owners_encode(const tdm_owners *o, const tdm_tenants *t, const char *file_name, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (o->n == 1 && o->v[0].tenant == TDM_TENANT_DEFAULT && !strcmp(o->v[0].name, file_name)) return 0;
    size_t n = sizeof TDM_OWNERS_MAGIC + 4;
    for (uint32_t i = 0; i < o->n; i++) n += 8 + strlen(tdm_tenants_name(t, o->v[i].tenant)) + strlen(o->v[i].name);
    uint8_t *buf = malloc(n), *p = buf;
    if (!buf) return TDM_ENOMEM;
    memcpy(p, TDM_OWNERS_MAGIC, sizeof TDM_OWNERS_MAGIC);
    p += sizeof TDM_OWNERS_MAGIC;
    put32(&p, o->n);
    for (uint32_t i = 0; i < o->n; i++) {
        const char *tn = tdm_tenants_name(t, o->v[i].tenant);
        uint32_t tl = (uint32_t)strlen(tn), nl = (uint32_t)strlen(o->v[i].name);
        put32(&p, tl);
        memcpy(p, tn, tl);
        p += tl;
        put32(&p, nl);
        memcpy(p, o->v[i].name, nl);
        p += nl;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* A length-prefixed string at *p within end, copied and terminated into a malloc'd buffer. */
static char *get_str(const uint8_t **p, const uint8_t *end)
{
    uint32_t l;
    if (end - *p < 4) return NULL;
    memcpy(&l, *p, 4);
    *p += 4;
    if ((size_t)(end - *p) < l || memchr(*p, 0, l)) return NULL;
    char *s = malloc((size_t)l + 1);
    if (!s) return NULL;
    memcpy(s, *p, l);
    s[l] = 0;
    *p += l;
    return s;
}

int tdm_owners_decode(const uint8_t *buf, size_t len, tdm_tenants *t, tdm_owners *out)
{
    const uint8_t *p = buf, *end = buf + len;
    uint32_t n;
    if (len < sizeof TDM_OWNERS_MAGIC + 4 || memcmp(p, TDM_OWNERS_MAGIC, sizeof TDM_OWNERS_MAGIC) != 0)
        return TDM_ECORRUPT;
    p += sizeof TDM_OWNERS_MAGIC;
    memcpy(&n, p, 4);
    p += 4;
    if (n == 0 || n > len) return TDM_ECORRUPT;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        char *tn = get_str(&p, end), *nm = tn ? get_str(&p, end) : NULL;
        uint32_t idx;
        if (!tn || !nm || tdm_tenants_intern(t, tn, &idx) != 0 || tdm_owners_find(out, idx) >= 0)
            rc = TDM_ECORRUPT;
        else rc = tdm_owners_add(out, idx, nm);
        free(tn);
        free(nm);
    }
    if (rc == 0 && p != end) rc = TDM_ECORRUPT;
    if (rc != 0) tdm_owners_clear(out);
    return rc;
}
