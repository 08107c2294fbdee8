#include "auth_limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull

typedef struct entry {
    char addr[64];
    uint32_t failures;      /* within the window that began at window_ns */
    uint64_t window_ns;
    uint64_t blocked_until; /* 0: not blocked */
    uint64_t last_ns;       /* last failure: which entry to forget first */
} entry;

struct tdm_auth_limit {
    uint32_t max_failures;
    uint64_t window_ns, block_ns;
    entry *v;
    uint32_t n, cap;
};

tdm_auth_limit *tdm_auth_limit_new(uint32_t max_failures, uint32_t window_s, uint32_t block_s, uint32_t max_entries)
{
    tdm_auth_limit *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->max_failures = max_failures;
    l->window_ns = window_s * NS;
    l->block_ns = block_s * NS;
    l->cap = max_entries ? max_entries : 1;
    if (!(l->v = calloc(l->cap, sizeof *l->v))) {
        free(l);
        return NULL;
    }
    return l;
}

void tdm_auth_limit_free(tdm_auth_limit *l)
{
    if (!l) return;
    free(l->v);
    free(l);
}

/* A scan: the table is small and only wrong tokens (each delayed by a second) and
 * Hellos of a blocked table's addresses look at it. */
static entry *find(tdm_auth_limit *l, const char *addr)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].addr, addr)) return &l->v[i];
    return NULL;
}

uint32_t tdm_auth_limit_blocked(tdm_auth_limit *l, const char *addr, uint64_t now_ns)
{
    if (!l->max_failures || !l->n) return 0;
    entry *e = find(l, addr);
    if (!e || e->blocked_until <= now_ns) return 0;
    return (uint32_t)((e->blocked_until - now_ns + NS - 1) / NS);
}

int tdm_auth_limit_fail(tdm_auth_limit *l, const char *addr, uint64_t now_ns)
{
    if (!l->max_failures) return 0;
    entry *e = find(l, addr);
    if (!e) {
        if (l->n < l->cap) {
            e = &l->v[l->n++];
        } else { /* forget the entry whose last event (failure or block) is oldest */
            e = &l->v[0];
            for (uint32_t i = 1; i < l->n; i++) {
                uint64_t a = l->v[i].blocked_until > l->v[i].last_ns ? l->v[i].blocked_until : l->v[i].last_ns;
                uint64_t b = e->blocked_until > e->last_ns ? e->blocked_until : e->last_ns;
                if (a < b) e = &l->v[i];
            }
        }
        memset(e, 0, sizeof *e);
        snprintf(e->addr, sizeof e->addr, "%s", addr);
        e->window_ns = now_ns;
    }
    e->last_ns = now_ns;
    if (e->blocked_until > now_ns) return 0; /* already blocked (a Hello sent before the block answered late) */
    if (now_ns - e->window_ns >= l->window_ns) {
        e->window_ns = now_ns;
        e->failures = 0;
    }
    if (++e->failures < l->max_failures) return 0;
    e->blocked_until = now_ns + l->block_ns;
    e->failures = 0;
    e->window_ns = e->blocked_until;
    return 1;
}
