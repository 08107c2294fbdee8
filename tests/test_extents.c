/* gpu/extents.h (the express ring's program arena) against a brute-force oracle: a map of
 * the arena's granules, taken or free, on random sequences of allocations and frees. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "geom/base.h"
#include "gpu/extents.h"

#define G TDM_EXTENTS_ALIGN

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The oracle's first fit: the lowest granule g with n free granules from it, or SIZE_MAX. */
static size_t oracle_fit(const uint8_t *taken, size_t granules, size_t n)
{
    for (size_t g = 0; g + n <= granules; g++) {
        size_t k = 0;
        while (k < n && !taken[g + k]) k++;
        if (k == n) return g;
        g += k; /* the next window starts past the taken granule */
    }
    return SIZE_MAX;
}

/* Every free extent is a maximal run of free granules of the oracle, in order, and the free
 * bytes add up. */
static void same_as_oracle(const tdm_extents *x, const uint8_t *taken, size_t granules)
{
    size_t e = 0, free_granules = 0;
    for (size_t g = 0; g < granules;) {
        if (taken[g]) {
            g++;
            continue;
        }
        size_t end = g;
        while (end < granules && !taken[end]) end++;
        cr_assert_lt(e, x->n_free, "a free run at granule %zu that no extent holds", g);
        cr_assert_eq(x->free[e].off, g * G, "extent %zu starts at %zu, the run at %zu", e, x->free[e].off, g * G);
        cr_assert_eq(x->free[e].len, (end - g) * G, "extent %zu is %zu bytes, the run %zu", e, x->free[e].len,
                     (end - g) * G);
        free_granules += end - g;
        e++;
        g = end;
    }
    cr_assert_eq(e, x->n_free, "%zu extents for %zu free runs", x->n_free, e);
    cr_assert_eq(x->free_bytes, free_granules * G);
}

Test(extents, random_allocations_and_frees_match_the_oracle)
{
    enum { GRANULES = 200, LIVE = 64, STEPS = 20000 };
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    tdm_extents x;
    cr_assert_eq(tdm_extents_init(&x, GRANULES * G + 100), TDM_OK); /* the odd 100 bytes are left out */
    cr_assert_eq(x.total, (size_t)GRANULES * G);
    uint8_t taken[GRANULES] = {0};
    struct { size_t off, bytes; } live[LIVE];
    size_t n_live = 0, fails = 0, allocs = 0;
    for (int step = 0; step < STEPS; step++) {
        uint64_t r = rng_next(&seed);
        if (n_live < LIVE && (n_live == 0 || r % 3 != 0)) {
            size_t bytes = 1 + rng_next(&seed) % (12 * G); /* 1 to 12 granules, rarely a whole one */
            size_t n = (bytes + G - 1) / G, want = oracle_fit(taken, GRANULES, n);
            size_t off = tdm_extents_alloc(&x, bytes);
            if (want == SIZE_MAX) {
                cr_assert_eq(off, SIZE_MAX, "step %d: %zu bytes placed at %zu, the oracle has no room", step, bytes, off);
                fails++;
            } else {
                cr_assert_eq(off, want * G, "step %d: %zu bytes at %zu, first fit is %zu", step, bytes, off, want * G);
                memset(taken + want, 1, n);
                live[n_live].off = off, live[n_live].bytes = bytes, n_live++;
                allocs++;
            }
        } else {
            size_t k = rng_next(&seed) % n_live;
            cr_assert_eq(tdm_extents_free(&x, live[k].off, live[k].bytes), TDM_OK);
            memset(taken + live[k].off / G, 0, (live[k].bytes + G - 1) / G);
            /* a second free of the same range changes nothing */
            cr_assert_eq(tdm_extents_free(&x, live[k].off, live[k].bytes), TDM_EINVAL);
            live[k] = live[--n_live];
        }
        same_as_oracle(&x, taken, GRANULES);
    }
    cr_assert(fails > 0 && allocs > 1000, "the sequence needs both full and placed allocations (%zu, %zu)", fails,
              allocs);
    while (n_live) {
        n_live--;
        cr_assert_eq(tdm_extents_free(&x, live[n_live].off, live[n_live].bytes), TDM_OK);
    }
    cr_assert_eq(x.n_free, 1);
    cr_assert_eq(x.free_bytes, x.total);
    tdm_extents_destroy(&x);
}

Test(extents, bad_frees_change_nothing)
{
    tdm_extents x;
    cr_assert_eq(tdm_extents_init(&x, 16 * G), TDM_OK);
    size_t a = tdm_extents_alloc(&x, 3 * G), b = tdm_extents_alloc(&x, 1), c = tdm_extents_alloc(&x, G + 1);
    cr_assert_eq(a, 0);
    cr_assert_eq(b, 3 * G);
    cr_assert_eq(c, 4 * G);
    cr_assert_eq(x.free_bytes, 10 * G);
    cr_assert_eq(tdm_extents_free(&x, b + 1, 1), TDM_EINVAL);       /* not aligned */
    cr_assert_eq(tdm_extents_free(&x, 16 * G, 1), TDM_EINVAL);      /* past the end */
    cr_assert_eq(tdm_extents_free(&x, 15 * G, 2 * G), TDM_EINVAL);  /* runs past the end */
    cr_assert_eq(tdm_extents_free(&x, c, 3 * G), TDM_EINVAL);       /* reaches into the free part */
    cr_assert_eq(tdm_extents_free(&x, 0, 0), TDM_EINVAL);           /* nothing */
    cr_assert_eq(tdm_extents_free(&x, SIZE_MAX - G + 1, G), TDM_EINVAL);
    cr_assert_eq(x.free_bytes, 10 * G);
    cr_assert_eq(x.n_free, 1);
    cr_assert_eq(tdm_extents_alloc(&x, 0), SIZE_MAX);
    cr_assert_eq(tdm_extents_alloc(&x, 11 * G), SIZE_MAX);          /* more than is free */
    cr_assert_eq(tdm_extents_alloc(&x, SIZE_MAX), SIZE_MAX);
    cr_assert_eq(x.free_bytes, 10 * G);
    /* the middle one given back, then its neighbours: one extent again */
    cr_assert_eq(tdm_extents_free(&x, b, 1), TDM_OK);
    cr_assert_eq(x.n_free, 2);
    cr_assert_eq(tdm_extents_free(&x, b, 1), TDM_EINVAL);
    cr_assert_eq(tdm_extents_free(&x, a, 3 * G), TDM_OK);
    cr_assert_eq(tdm_extents_free(&x, c, G + 1), TDM_OK);
    cr_assert_eq(x.n_free, 1);
    cr_assert_eq(x.free_bytes, 16 * G);
    tdm_extents_destroy(&x);
    cr_assert_eq(tdm_extents_init(&x, G - 1), TDM_EINVAL);
}
