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
    uint64_t bytes;     /* the tree's */
    uint64_t idle_since; /* refs 0: when it was last released (the idle clock), for dropping the oldest */
} entry;

struct tdm_shape_cache {
    pthread_mutex_t mu;
    entry **bucket;
    size_t n_buckets, n;
    size_t n_idle;      /* entries no scene holds, kept for the next scene */
    uint64_t idle_bytes, clock;
};

/* Shapes no scene holds are kept for the next scene (a planner's put after its
 * delete, problem after problem), at most this many and this many bytes of trees:
 * past either, the one released longest ago is freed. */
#define IDLE_MAX 256
#define IDLE_MAX_BYTES (32ull << 20)

static uint64_t tree_bytes(const tdm_bvh *b)
{
    return (uint64_t)b->n_nodes * sizeof *b->nodes + (uint64_t)b->n_tris * (9 * sizeof(float) + sizeof(uint32_t));
}

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
        if (e->refs++ == 0) { /* held again */
            c->n_idle--;
            c->idle_bytes -= e->bytes;
        }
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
        if (e->refs++ == 0) {
            c->n_idle--;
            c->idle_bytes -= e->bytes;
        }
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
    made->bytes = tree_bytes(bvh);
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

/* mu held: unlinks the idle entry released longest ago (or NULL when none). */
static entry *unlink_oldest_idle(tdm_shape_cache *c)
{
    entry **best = NULL;
    for (size_t b = 0; b < c->n_buckets; b++)
        for (entry **pe = &c->bucket[b]; *pe; pe = &(*pe)->next)
            if ((*pe)->refs == 0 && (!best || (*pe)->idle_since < (*best)->idle_since)) best = pe;
    if (!best) return NULL;
    entry *e = *best;
    *best = e->next;
    c->n--;
    c->n_idle--;
    c->idle_bytes -= e->bytes;
    return e;
}

void tdm_shape_cache_release(tdm_shape_cache *c, const tdm_primitive *p, double tolerance)
{
    key k = key_of(p, tolerance);
    entry *drop = NULL;
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, &k);
    if (e && --e->refs == 0) { /* kept idle, for the next scene; the oldest idle one goes past the bounds */
        e->idle_since = ++c->clock;
        c->n_idle++;
        c->idle_bytes += e->bytes;
        if (c->n_idle > IDLE_MAX || c->idle_bytes > IDLE_MAX_BYTES) drop = unlink_oldest_idle(c);
    }
    pthread_mutex_unlock(&c->mu);
    if (drop) {
        tdm_bvh_free(drop->bvh);
        free(drop);
    }
}

/* Shapes no scene holds are freed (tests; and a way to give the memory back). */
void tdm_shape_cache_trim(tdm_shape_cache *c)
{
    for (;;) {
        pthread_mutex_lock(&c->mu);
        entry *e = unlink_oldest_idle(c);
        pthread_mutex_unlock(&c->mu);
        if (!e) return;
        tdm_bvh_free(e->bvh);
        free(e);
    }
}

size_t tdm_shape_cache_count(tdm_shape_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->n - c->n_idle;
    pthread_mutex_unlock(&c->mu);
    return n;
}

size_t tdm_shape_cache_idle(tdm_shape_cache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->n_idle;
    pthread_mutex_unlock(&c->mu);
    return n;
}
