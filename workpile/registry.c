/* The registry of resident meshes (registry.h): a hash table of host-tree
 * addresses, chained, doubled when full; each entry holds one copy per device.
 * Two locks: `lock` guards the table (lookups, references), `removed_lock` the
 * removed list, which is walked while copies are freed (a device free may take
 * milliseconds: lookups never wait for it). Order: never both at once. */
#include "registry.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define MAX_DEVICES 64

typedef struct entry {
    const tdm_bvh *bvh;
    size_t refs;
    struct entry *next; /* hash chain, or the removed list */
    void *copy[];       /* one per device */
} entry;

struct tdm_registry {
    pthread_mutex_t lock;
    entry **table;
    size_t size, n; /* buckets (a power of two, or 0), entries */
    int devices;
    pthread_mutex_t removed_lock;
    entry *removed;
    uint64_t epoch; /* trees that left (tdm_registry_epoch): written under lock, read atomically */
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

int tdm_registry_create(int n_devices, tdm_registry **out)
{
    *out = NULL;
    if (n_devices < 1 || n_devices > MAX_DEVICES) return TDM_EINVAL;
    tdm_registry *r = calloc(1, sizeof *r);
    if (!r) return TDM_ENOMEM;
    r->devices = n_devices;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return TDM_ESYS;
    }
    if (pthread_mutex_init(&r->removed_lock, NULL) != 0) {
        pthread_mutex_destroy(&r->lock);
        free(r);
        return TDM_ESYS;
    }
    *out = r;
    return TDM_OK;
}

static void free_entry(tdm_registry *r, entry *d, tdm_registry_free_fn free_copy, void *ctx)
{
    for (int k = 0; k < r->devices; k++)
        if (d->copy[k] && free_copy) free_copy(ctx, k, d->copy[k]);
    free(d);
}

void tdm_registry_destroy(tdm_registry *r, tdm_registry_free_fn free_copy, void *ctx)
{
    if (!r) return;
    for (entry *d = r->removed, *nx; d; d = nx) {
        nx = d->next;
        free_entry(r, d, free_copy, ctx);
    }
    for (size_t i = 0; i < r->size; i++)
        for (entry *d = r->table[i], *nx; d; d = nx) {
            nx = d->next;
            free_entry(r, d, free_copy, ctx);
        }
    free(r->table);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->removed_lock);
    free(r);
}

int tdm_registry_devices(const tdm_registry *r) { return r->devices; }

void *tdm_registry_find(tdm_registry *r, int dev, const tdm_bvh *bvh)
{
    pthread_mutex_lock(&r->lock);
    entry *d = find(r, bvh);
    void *c = d ? d->copy[dev] : NULL;
    pthread_mutex_unlock(&r->lock);
    return c;
}

void tdm_registry_find2(tdm_registry *r, int dev, const tdm_bvh *a, const tdm_bvh *b, void **ca, void **cb)
{
    pthread_mutex_lock(&r->lock);
    entry *da = find(r, a), *db = find(r, b);
    *ca = da ? da->copy[dev] : NULL;
    *cb = db ? db->copy[dev] : NULL;
    pthread_mutex_unlock(&r->lock);
}

uint64_t tdm_registry_find_n(tdm_registry *r, int dev, const tdm_bvh *const *bvhs, size_t n, void **copies)
{
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        entry *d = find(r, bvhs[i]);
        copies[i] = d ? d->copy[dev] : NULL;
    }
    uint64_t epoch = r->epoch;
    pthread_mutex_unlock(&r->lock);
    return epoch;
}

uint64_t tdm_registry_epoch(tdm_registry *r)
{
    return __atomic_load_n(&r->epoch, __ATOMIC_ACQUIRE);
}

int tdm_registry_ref(tdm_registry *r, const tdm_bvh *bvh)
{
    pthread_mutex_lock(&r->lock);
    entry *d = find(r, bvh);
    if (d) d->refs++;
    pthread_mutex_unlock(&r->lock);
    return d != NULL;
}

int tdm_registry_insert(tdm_registry *r, const tdm_bvh *bvh, void *const *copies)
{
    entry *d = malloc(sizeof *d + (size_t)r->devices * sizeof d->copy[0]);
    if (!d) return TDM_ENOMEM;
    d->bvh = bvh;
    d->refs = 1;
    d->next = NULL;
    for (int k = 0; k < r->devices; k++) d->copy[k] = copies[k];
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
    entry *gone = NULL;
    pthread_mutex_lock(&r->lock);
    if (r->table) {
        for (entry **pp = &r->table[hash_ptr(bvh, r->size)]; *pp; pp = &(*pp)->next) {
            entry *d = *pp;
            if (d->bvh != bvh) continue;
            if (--d->refs == 0) {
                *pp = d->next;
                r->n--;
                gone = d;
                __atomic_store_n(&r->epoch, r->epoch + 1, __ATOMIC_RELEASE);
            }
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (!gone) return;
    pthread_mutex_lock(&r->removed_lock);
    gone->next = r->removed;
    r->removed = gone;
    pthread_mutex_unlock(&r->removed_lock);
}

void tdm_registry_free_removed(tdm_registry *r, int dev, tdm_registry_free_fn free_copy, void *ctx)
{
    pthread_mutex_lock(&r->removed_lock);
    for (entry **pp = &r->removed; *pp;) {
        entry *d = *pp;
        if (d->copy[dev]) {
            free_copy(ctx, dev, d->copy[dev]);
            d->copy[dev] = NULL;
        }
        int left = 0;
        for (int k = 0; k < r->devices && !left; k++) left = d->copy[k] != NULL;
        if (left) {
            pp = &d->next;
        } else {
            *pp = d->next;
            free(d);
        }
    }
    pthread_mutex_unlock(&r->removed_lock);
}

size_t tdm_registry_count(tdm_registry *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->n;
    pthread_mutex_unlock(&r->lock);
    return n;
}

size_t tdm_registry_removed(tdm_registry *r, int dev)
{
    size_t n = 0;
    pthread_mutex_lock(&r->removed_lock);
    for (entry *d = r->removed; d; d = d->next) n += d->copy[dev] != NULL;
    pthread_mutex_unlock(&r->removed_lock);
    return n;
}
