#include "store.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct table {
    void **buckets; /* tdm_stored_mesh* or tdm_stored_scene*, chained through hnext */
    size_t n_buckets, n;
} table;

struct tdm_store {
    table meshes, scenes;
    tdm_stored_mesh *mesh_head, *mesh_tail;
    tdm_stored_scene *scene_head, *scene_tail;
    uint64_t bytes, reserved;
};

static size_t bucket_of(const uint8_t id[TDM_ID_LEN], size_t n_buckets)
{
    uint64_t h;
    memcpy(&h, id, sizeof h); /* ids are SHA-256: already uniform */
    return (size_t)(h & (n_buckets - 1));
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- generic chained table; the entry's id and hnext are found by offset ---- */

#define ENTRY_ID(e, off_id) ((uint8_t *)(e) + (off_id))
#define ENTRY_NEXT(e, off_next) (*(void **)((char *)(e) + (off_next)))

static void *table_find(const table *t, const uint8_t id[TDM_ID_LEN], size_t off_id, size_t off_next)
{
    if (!t->n_buckets) return NULL;
    for (void *e = t->buckets[bucket_of(id, t->n_buckets)]; e; e = ENTRY_NEXT(e, off_next))
        if (memcmp(ENTRY_ID(e, off_id), id, TDM_ID_LEN) == 0) return e;
    return NULL;
}

static void table_insert(table *t, void *e, size_t off_id, size_t off_next)
{
    if (t->n + 1 > t->n_buckets) {
        size_t nb = t->n_buckets * 2;
        void **b = calloc(nb, sizeof *b);
        if (b) { /* on failure keep the old table: longer chains, still correct */
            for (size_t i = 0; i < t->n_buckets; i++)
                for (void *x = t->buckets[i], *next; x; x = next) {
                    next = ENTRY_NEXT(x, off_next);
                    size_t k = bucket_of(ENTRY_ID(x, off_id), nb);
                    ENTRY_NEXT(x, off_next) = b[k];
                    b[k] = x;
                }
            free(t->buckets);
            t->buckets = b;
            t->n_buckets = nb;
        }
    }
    assert(t->n_buckets > 0);
    size_t k = bucket_of(ENTRY_ID(e, off_id), t->n_buckets);
    ENTRY_NEXT(e, off_next) = t->buckets[k];
    t->buckets[k] = e;
    t->n++;
}

static void table_remove(table *t, void *e, size_t off_id, size_t off_next)
{
    void **pp = &t->buckets[bucket_of(ENTRY_ID(e, off_id), t->n_buckets)];
    while (*pp && *pp != e) pp = &ENTRY_NEXT(*pp, off_next);
    assert(*pp == e);
    *pp = ENTRY_NEXT(e, off_next);
    t->n--;
}

#define MESH_OFFS offsetof(tdm_stored_mesh, id), offsetof(tdm_stored_mesh, hnext)
#define SCENE_OFFS offsetof(tdm_stored_scene, id), offsetof(tdm_stored_scene, hnext)

/* ---- objects ---- */

tdm_stored_mesh *tdm_stored_mesh_new(const uint8_t id[TDM_ID_LEN], const char *name, uint32_t n_verts,
                                     uint32_t n_tris, uint64_t bytes, tdm_bvh *bvh)
{
    tdm_stored_mesh *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (!(m->name = dupstr(name))) {
        free(m);
        return NULL;
    }
    memcpy(m->id, id, TDM_ID_LEN);
    m->n_verts = n_verts;
    m->n_tris = n_tris;
    m->bytes = bytes;
    m->bvh = bvh;
    m->refs = 1;
    return m;
}

void tdm_stored_mesh_ref(tdm_stored_mesh *m) { m->refs++; }

void tdm_stored_mesh_unref(tdm_stored_mesh *m)
{
    if (!m) return;
    assert(m->refs > 0);
    if (--m->refs > 0) return;
    assert(!m->stored && m->scenes == 0);
    /* no query still reads the tree: each holds a scene reference, which holds ours */
    if (m->engine) tdm_sched_mesh_remove(m->engine, m->bvh);
    tdm_bvh_free(m->bvh);
    free(m->name);
    free(m);
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

tdm_stored_scene *tdm_stored_scene_new(const uint8_t id[TDM_ID_LEN], const char *name, tdm_scene *scene,
                                       tdm_stored_mesh *const *meshes, uint32_t n)
{
    tdm_stored_scene *sc = calloc(1, sizeof *sc);
    if (!sc) goto fail;
    sc->name = dupstr(name);
    sc->meshes = malloc(sizeof *sc->meshes * (n ? n : 1));
    if (!sc->name || !sc->meshes) goto fail;
    memcpy(sc->meshes, meshes, sizeof *meshes * n);
    qsort(sc->meshes, n, sizeof *sc->meshes, cmp_ptr);
    for (uint32_t i = 0; i < n; i++)
        if (i == 0 || sc->meshes[i] != sc->meshes[i - 1]) sc->meshes[sc->n_meshes++] = sc->meshes[i];
    for (uint32_t i = 0; i < sc->n_meshes; i++) {
        tdm_stored_mesh_ref(sc->meshes[i]);
        sc->meshes[i]->scenes++;
    }
    memcpy(sc->id, id, TDM_ID_LEN);
    sc->scene = scene;
    sc->refs = 1;
    return sc;
fail:
    if (sc) {
        free(sc->name);
        free(sc->meshes);
        free(sc);
    }
    tdm_scene_destroy(scene);
    return NULL;
}

void tdm_stored_scene_ref(tdm_stored_scene *sc) { sc->refs++; }

void tdm_stored_scene_retire(tdm_stored_scene *sc)
{
    if (sc->retired) return;
    sc->retired = 1;
    for (uint32_t i = 0; i < sc->n_meshes; i++) {
        assert(sc->meshes[i]->scenes > 0);
        sc->meshes[i]->scenes--;
    }
}

void tdm_stored_scene_unref(tdm_stored_scene *sc)
{
    if (!sc) return;
    assert(sc->refs > 0);
    if (--sc->refs > 0) return;
    assert(!sc->stored);
    tdm_stored_scene_retire(sc);
    tdm_scene_destroy(sc->scene);
    for (uint32_t i = 0; i < sc->n_meshes; i++) tdm_stored_mesh_unref(sc->meshes[i]);
    free(sc->meshes);
    free(sc->name);
    free(sc);
}

/* ---- the store ---- */

tdm_store *tdm_store_new(void)
{
    tdm_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->meshes.n_buckets = s->scenes.n_buckets = 64;
    s->meshes.buckets = calloc(64, sizeof(void *));
    s->scenes.buckets = calloc(64, sizeof(void *));
    if (!s->meshes.buckets || !s->scenes.buckets) {
        free(s->meshes.buckets);
        free(s->scenes.buckets);
        free(s);
        return NULL;
    }
    return s;
}

void tdm_store_free(tdm_store *s)
{
    if (!s) return;
    /* scenes first: they hold references on meshes */
    while (s->scene_head) {
        tdm_stored_scene *sc = s->scene_head;
        tdm_store_remove_scene(s, sc);
        tdm_stored_scene_unref(sc);
    }
    while (s->mesh_head) {
        tdm_stored_mesh *m = s->mesh_head;
        tdm_store_remove_mesh(s, m);
        tdm_stored_mesh_unref(m);
    }
    free(s->meshes.buckets);
    free(s->scenes.buckets);
    free(s);
}

tdm_stored_mesh *tdm_store_find_mesh(tdm_store *s, const uint8_t id[TDM_ID_LEN])
{
    return table_find(&s->meshes, id, MESH_OFFS);
}

tdm_stored_scene *tdm_store_find_scene(tdm_store *s, const uint8_t id[TDM_ID_LEN])
{
    return table_find(&s->scenes, id, SCENE_OFFS);
}

void tdm_store_add_mesh(tdm_store *s, tdm_stored_mesh *m)
{
    assert(!m->stored && !tdm_store_find_mesh(s, m->id));
    table_insert(&s->meshes, m, MESH_OFFS);
    m->stored = 1;
    m->prev = s->mesh_tail;
    m->next = NULL;
    if (s->mesh_tail) s->mesh_tail->next = m;
    else s->mesh_head = m;
    s->mesh_tail = m;
    s->bytes += m->bytes;
}

void tdm_store_remove_mesh(tdm_store *s, tdm_stored_mesh *m)
{
    assert(m->stored);
    table_remove(&s->meshes, m, MESH_OFFS);
    m->stored = 0;
    if (m->prev) m->prev->next = m->next;
    else s->mesh_head = m->next;
    if (m->next) m->next->prev = m->prev;
    else s->mesh_tail = m->prev;
    m->prev = m->next = NULL;
    s->bytes -= m->bytes;
}

void tdm_store_add_scene(tdm_store *s, tdm_stored_scene *sc)
{
    assert(!sc->stored && !sc->retired && !tdm_store_find_scene(s, sc->id));
    table_insert(&s->scenes, sc, SCENE_OFFS);
    sc->stored = 1;
    sc->prev = s->scene_tail;
    sc->next = NULL;
    if (s->scene_tail) s->scene_tail->next = sc;
    else s->scene_head = sc;
    s->scene_tail = sc;
}

void tdm_store_remove_scene(tdm_store *s, tdm_stored_scene *sc)
{
    assert(sc->stored);
    table_remove(&s->scenes, sc, SCENE_OFFS);
    sc->stored = 0;
    if (sc->prev) sc->prev->next = sc->next;
    else s->scene_head = sc->next;
    if (sc->next) sc->next->prev = sc->prev;
    else s->scene_tail = sc->prev;
    sc->prev = sc->next = NULL;
}

tdm_stored_mesh *tdm_store_meshes(tdm_store *s) { return s->mesh_head; }
tdm_stored_scene *tdm_store_scenes(tdm_store *s) { return s->scene_head; }
uint32_t tdm_store_n_meshes(const tdm_store *s) { return (uint32_t)s->meshes.n; }
uint32_t tdm_store_n_scenes(const tdm_store *s) { return (uint32_t)s->scenes.n; }
uint64_t tdm_store_bytes(const tdm_store *s) { return s->bytes; }
uint64_t tdm_store_reserved(const tdm_store *s) { return s->reserved; }
void tdm_store_reserve(tdm_store *s, uint64_t bytes) { s->reserved += bytes; }
void tdm_store_unreserve(tdm_store *s, uint64_t bytes)
{
    assert(s->reserved >= bytes);
    s->reserved -= bytes;
}
