/* The registry of resident meshes (registry.h): a hash table of host-tree
 * addresses, chained, doubled when full. */
#include "registry.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct entry {
    const tdm_bvh *bvh;
    void *copy;
    size_t refs;
    struct entry *next; /* hash chain, or the removed list */
} entry;

struct tdm_registry {
    pthread_mutex_t lock;
    entry **table;
    size_t size, n; /* buckets (a power of two, or 0), entries */
    entry *removed;
};

static size_t hash_ptr(const void *p, size_t size)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)(x & (size - 1));
}

/* lock held */
static entry *find(tdm_registry *r, const tdm_bvh *bvh)
{
    if (!r->table) return NULL;
    for (entry *d = r->table[hash_ptr(bvh, r->size)]; d; d = d->next)
        if (d->bvh == bvh) return d;
    return NULL;
}

int tdm_registry_create(tdm_registry **out)
{
    *out = NULL;
    tdm_registry *r = calloc(1, sizeof *r);
    if (!r) return TDM_ENOMEM;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return TDM_ESYS;
    }
    *out = r;
    return TDM_OK;
}

void tdm_registry_destroy(tdm_registry *r, void (*free_copy)(void *ctx, void *copy), void *ctx)
{
    if (!r) return;
    tdm_registry_free_removed(r, free_copy, ctx);
    for (size_t i = 0; i < r->size; i++)
        for (entry *d = r->table[i], *nx; d; d = nx) {
            nx = d->next;
            free_copy(ctx, d->copy);
            free(d);
        }
    free(r->table);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void *tdm_registry_find(tdm_registry *r, const tdm_bvh *bvh)
{
    pthread_mutex_lock(&r->lock);
    entry *d = find(r, bvh);
    void *c = d ? d->copy : NULL;
    pthread_mutex_unlock(&r->lock);
    return c;
}

void tdm_registry_find2(tdm_registry *r, const tdm_bvh *a, const tdm_bvh *b, void **ca, void **cb)
{
    pthread_mutex_lock(&r->lock);
    entry *da = find(r, a), *db = find(r, b);
    *ca = da ? da->copy : NULL;
    *cb = db ? db->copy : NULL;
    pthread_mutex_unlock(&r->lock);
}

int tdm_registry_ref(tdm_registry *r, const tdm_bvh *bvh)
{
    pthread_mutex_lock(&r->lock);
    entry *d = find(r, bvh);
    if (d) d->refs++;
    pthread_mutex_unlock(&r->lock);
    return d != NULL;
}

int tdm_registry_insert(tdm_registry *r, const tdm_bvh *bvh, void *copy)
{
    entry *d = malloc(sizeof *d);
    if (!d) return TDM_ENOMEM;
    *d = (entry){bvh, copy, 1, NULL};
    pthread_mutex_lock(&r->lock);
    if (r->n + 1 > r->size) {
        size_t size = r->size ? 2 * r->size : 64;
        entry **t = calloc(size, sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&r->lock);
            free(d);
            return TDM_ENOMEM;
        }
        for (size_t i = 0; i < r->size; i++)
            for (entry *x = r->table[i], *nx; x; x = nx) {
                nx = x->next;
                size_t h = hash_ptr(x->bvh, size);
                x->next = t[h];
                t[h] = x;
            }
        free(r->table);
        r->table = t;
        r->size = size;
    }
    size_t h = hash_ptr(bvh, r->size);
    d->next = r->table[h];
    r->table[h] = d;
    r->n++;
    pthread_mutex_unlock(&r->lock);
    return TDM_OK;
}

void tdm_registry_unref(tdm_registry *r, const tdm_bvh *bvh)
{
    pthread_mutex_lock(&r->lock);
    if (r->table) {
        for (entry **pp = &r->table[hash_ptr(bvh, r->size)]; *pp; pp = &(*pp)->next) {
            entry *d = *pp;
            if (d->bvh != bvh) continue;
            if (--d->refs == 0) {
                *pp = d->next;
                r->n--;
                d->next = r->removed;
                r->removed = d;
            }
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
}

void tdm_registry_free_removed(tdm_registry *r, void (*free_copy)(void *ctx, void *copy), void *ctx)
{
    pthread_mutex_lock(&r->lock);
    entry *d = r->removed;
    r->removed = NULL;
    pthread_mutex_unlock(&r->lock);
    while (d) {
        entry *nx = d->next;
        free_copy(ctx, d->copy);
        free(d);
        d = nx;
    }
}

size_t tdm_registry_count(tdm_registry *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->n;
    pthread_mutex_unlock(&r->lock);
    return n;
}
