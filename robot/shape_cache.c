/* Trees of primitive shapes shared by the scenes that use them: see shape_cache.h. */
#include "shape_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../geom/base.h"

/* What makes two shapes one: compared as bytes, so built zeroed (padding too). */
typedef struct key {
    int type;
    double dims[3];
    double tolerance;
} key;

typedef struct entry {
    struct entry *next;
    key k;
    tdm_bvh *bvh;
    double deviation;
    uint64_t refs;
} entry;

struct tdm_shape_cache {
    pthread_mutex_t mu;
    entry **bucket;
    size_t n_buckets, n;
};

static key key_of(const tdm_primitive *p, double tolerance)
{
    key k;
    memset(&k, 0, sizeof k);
    k.type = (int)p->type;
    memcpy(k.dims, p->dims, sizeof k.dims);
    k.tolerance = tolerance;
    return k;
}

/* FNV-1a over the key's bytes: a table index, nothing more. */
static size_t hash_of(const key *k)
{
    const unsigned char *b = (const unsigned char *)k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ b[i]) * 1099511628211ull;
    return (size_t)h;
}

int tdm_shape_cache_create(tdm_shape_cache **out)
{
    *out = NULL;
    tdm_shape_cache *c = calloc(1, sizeof *c);
    if (!c) return TDM_ENOMEM;
    c->n_buckets = 64;
    c->bucket = calloc(c->n_buckets, sizeof *c->bucket);
    if (!c->bucket || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c->bucket);
        free(c);
        return TDM_ENOMEM;
    }
    *out = c;
    return TDM_OK;
}

void tdm_shape_cache_destroy(tdm_shape_cache *c)
{
    if (!c) return;
    for (size_t b = 0; b < c->n_buckets; b++)
        for (entry *e = c->bucket[b], *next; e; e = next) {
            next = e->next;
            tdm_bvh_free(e->bvh);
            free(e);
        }
    free(c->bucket);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* mu held. */
static entry *find(tdm_shape_cache *c, const key *k)
{
    for (entry *e = c->bucket[hash_of(k) % c->n_buckets]; e; e = e->next)
        if (memcmp(&e->k, k, sizeof *k) == 0) return e;
    return NULL;
}

/* mu held: twice the buckets once there are more entries than buckets (a failed
 * growth keeps the old table: longer chains, the same answers). */
static void grow(tdm_shape_cache *c)
{
    if (c->n <= c->n_buckets) return;
    size_t nb = 2 * c->n_buckets;
    entry **t = calloc(nb, sizeof *t);
    if (!t) return;
    for (size_t b = 0; b < c->n_buckets; b++)
        for (entry *e = c->bucket[b], *next; e; e = next) {
            next = e->next;
            size_t h = hash_of(&e->k) % nb;
            e->next = t[h];
            t[h] = e;
        }
    free(c->bucket);
    c->bucket = t;
    c->n_buckets = nb;
}

int tdm_shape_cache_get(tdm_shape_cache *c, const tdm_primitive *p, double tolerance, tdm_bvh **out,
                        double *deviation, char *why, size_t whylen)
{
    *out = NULL;
    key k = key_of(p, tolerance);
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, &k);
    if (e) {
        e->refs++;
        *out = e->bvh;
        *deviation = e->deviation;
        pthread_mutex_unlock(&c->mu);
        return TDM_OK;
    }
    pthread_mutex_unlock(&c->mu);

    /* built outside the lock: the other shapes' gets and releases go on meanwhile */
    tdm_mesh *m = NULL;
    double dev = 0;
    int rc = tdm_primitive_mesh(p, tolerance, &m, &dev, why, whylen);
    if (rc != TDM_OK) return rc;
    tdm_bvh *bvh = NULL;
    rc = tdm_bvh_build(m, &bvh);
    tdm_mesh_free(m);
    if (rc != TDM_OK) {
        if (whylen) snprintf(why, whylen, "building its tree failed: %s", tdm_strerror(rc));
        return rc;
    }
    entry *made = calloc(1, sizeof *made);
    if (!made) {
        tdm_bvh_free(bvh);
        if (whylen) snprintf(why, whylen, "out of memory");
        return TDM_ENOMEM;
    }

    pthread_mutex_lock(&c->mu);
    if ((e = find(c, &k)) != NULL) { /* another thread built it meanwhile: theirs */
        e->refs++;
        *out = e->bvh;
        *deviation = e->deviation;
        pthread_mutex_unlock(&c->mu);
        tdm_bvh_free(bvh);
        free(made);
        return TDM_OK;
    }
    made->k = k;
    made->bvh = bvh;
    made->deviation = dev;
    made->refs = 1;
    size_t h = hash_of(&k) % c->n_buckets;
    made->next = c->bucket[h];
    c->bucket[h] = made;
    c->n++;
    grow(c);
    pthread_mutex_unlock(&c->mu);
    *out = bvh;
    *deviation = dev;
    return TDM_OK;
}

void tdm_shape_cache_release(tdm_shape_cache *c, const tdm_primitive *p, double tolerance)
{
    key k = key_of(p, tolerance);
    pthread_mutex_lock(&c->mu);
    for (entry **pe = &c->bucket[hash_of(&k) % c->n_buckets]; *pe; pe = &(*pe)->next) {
        entry *e = *pe;
        if (memcmp(&e->k, &k, sizeof k) != 0) continue;
        if (--e->refs > 0) break;
        *pe = e->next;
        c->n--;
        pthread_mutex_unlock(&c->mu);
        tdm_bvh_free(e->bvh);
        free(e);
        return;
    }
    pthread_mutex_unlock(&c->mu);
}

size_t tdm_shape_cache_count(tdm_shape_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->n;
    pthread_mutex_unlock(&c->mu);
    return n;
}
