#include "catalog.h"

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* the tables hold entries; a lookup's entry is its object */
_Static_assert(offsetof(tdm_stored_mesh, entry) == 0, "the entry must be a mesh's first member");
_Static_assert(offsetof(tdm_stored_scene, entry) == 0, "the entry must be a scene's first member");
_Static_assert(offsetof(tdm_stored_robot, entry) == 0, "the entry must be a robot's first member");

/* A chained hash table of entries by id. Ids are SHA-256 digests, already
 * uniform: the first 8 bytes are the hash. An id may appear twice for a moment
 * (a scene listed while an older copy's file is still being removed), so lookups
 * say which state they want. */
typedef struct table {
    tdm_catalog_entry **buckets;
    size_t n_buckets; /* a power of two */
    size_t n;
} table;

struct tdm_catalog {
    pthread_mutex_t lock; /* the tables */
    table meshes, scenes, robots;
    /* the loops, under the server's lock */
    tdm_stored_mesh *mesh_head, *mesh_tail;
    tdm_stored_scene *scene_head, *scene_tail;
    tdm_stored_robot *robot_head, *robot_tail;
    uint32_t n_meshes, n_scenes, n_robots; /* listed */
    uint32_t n_ephemeral;                   /* listed scenes that are ephemeral */
    uint64_t bytes, reserved;
};

static size_t bucket_of(const uint8_t id[TDM_ID_LEN], size_t n_buckets)
{
    uint64_t h;
    memcpy(&h, id, sizeof h);
    return (size_t)(h & (n_buckets - 1));
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- the tables (callers hold the lock) ---- */

enum { WANT_LISTED, WANT_ON_DISK };

static tdm_catalog_entry *table_find(const table *t, const uint8_t id[TDM_ID_LEN], int want)
{
    for (tdm_catalog_entry *e = t->buckets[bucket_of(id, t->n_buckets)]; e; e = e->hnext)
        if ((want == WANT_LISTED ? e->listed : e->on_disk) && memcmp(e->id, id, TDM_ID_LEN) == 0) return e;
    return NULL;
}

static void table_insert(tdm_catalog *c, table *t, tdm_catalog_entry *e)
{
    if (t->n + 1 > t->n_buckets) {
        size_t nb = t->n_buckets * 2;
        tdm_catalog_entry **b = calloc(nb, sizeof *b);
        if (b) { /* on failure keep the old table: longer chains, still correct */
            for (size_t i = 0; i < t->n_buckets; i++)
                for (tdm_catalog_entry *x = t->buckets[i], *next; x; x = next) {
                    next = x->hnext;
                    size_t k = bucket_of(x->id, nb);
                    x->hnext = b[k];
                    b[k] = x;
                }
            free(t->buckets);
            t->buckets = b;
            t->n_buckets = nb;
        }
    }
    size_t k = bucket_of(e->id, t->n_buckets);
    e->hnext = t->buckets[k];
    t->buckets[k] = e;
    e->catalog = c;
    e->in_table = 1;
    t->n++;
}

static void table_remove(table *t, tdm_catalog_entry *e)
{
    tdm_catalog_entry **pp = &t->buckets[bucket_of(e->id, t->n_buckets)];
    while (*pp && *pp != e) pp = &(*pp)->hnext;
    assert(*pp == e);
    *pp = e->hnext;
    e->hnext = NULL;
    e->in_table = 0; /* e->catalog stays: the object belongs to this catalogue for good */
    t->n--;
}

/* An entry's state changed: it stays in its table while listed or on disk. */
static void settle(tdm_catalog *c, table *t, tdm_catalog_entry *e)
{
    int keep = e->listed || e->on_disk;
    if (keep && !e->in_table) table_insert(c, t, e);
    else if (!keep && e->in_table) table_remove(t, e);
}

static int table_init(table *t)
{
    t->n_buckets = 64;
    t->n = 0;
    t->buckets = calloc(t->n_buckets, sizeof *t->buckets);
    return t->buckets ? 0 : -1;
}

/* Takes every entry out of its table and forgets the catalogue (it is being
 * freed); listed ones stay listed until the caller unlists them. */
static void table_clear(table *t)
{
    for (size_t i = 0; i < t->n_buckets; i++)
        for (tdm_catalog_entry *e = t->buckets[i], *next; e; e = next) {
            next = e->hnext;
            e->hnext = NULL;
            e->catalog = NULL;
            e->in_table = 0;
            e->on_disk = 0;
        }
    memset(t->buckets, 0, t->n_buckets * sizeof *t->buckets);
    t->n = 0;
}

/* An object about to be freed leaves its table (only an unlisted one can still
 * be there: on disk, its op gone; see catalog.h). */
enum { KIND_MESH, KIND_SCENE, KIND_ROBOT };

static void forget(tdm_catalog_entry *e, int kind)
{
    tdm_catalog *c = e->catalog; /* set once, when it first entered a table */
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    assert(!e->listed);
    e->on_disk = 0;
    settle(c, kind == KIND_MESH ? &c->meshes : kind == KIND_SCENE ? &c->scenes : &c->robots, e);
    pthread_mutex_unlock(&c->lock);
}

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
    memcpy(m->entry.id, id, TDM_ID_LEN);
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
    assert(!m->entry.listed && m->scenes == 0 && m->robots == 0);
    forget(&m->entry, KIND_MESH);
    /* no query still reads the tree: each holds a scene reference, which holds ours */
    if (m->engine) tdm_sched_mesh_remove(m->engine, m->bvh);
    tdm_bvh_free(m->bvh);
    tdm_owners_clear(&m->entry.owners);
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
    memcpy(sc->entry.id, id, TDM_ID_LEN);
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

/* Atomic: the loops' queries take references holding the server's lock shared (io.h); the
 * last one, which frees, is let go holding it exclusive. */
void tdm_stored_scene_ref(tdm_stored_scene *sc) { __atomic_add_fetch(&sc->refs, 1, __ATOMIC_RELAXED); }

void tdm_stored_scene_retire(tdm_stored_scene *sc)
{
    if (sc->retired) return;
    sc->retired = 1;
    if (sc->robot) {
        assert(sc->robot->scenes > 0);
        sc->robot->scenes--;
    }
    for (uint32_t i = 0; i < sc->n_meshes; i++) {
        assert(sc->meshes[i]->scenes > 0);
        sc->meshes[i]->scenes--;
    }
}

int tdm_stored_scene_unref_shared(tdm_stored_scene *sc)
{
    uint32_t r = __atomic_load_n(&sc->refs, __ATOMIC_RELAXED);
    while (r > 1)
        if (__atomic_compare_exchange_n(&sc->refs, &r, r - 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 1;
    return 0;
}

void tdm_stored_scene_unref(tdm_stored_scene *sc)
{
    if (!sc) return;
    assert(__atomic_load_n(&sc->refs, __ATOMIC_RELAXED) > 0);
    if (__atomic_sub_fetch(&sc->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    assert(!sc->entry.listed);
    forget(&sc->entry, KIND_SCENE);
    tdm_stored_scene_retire(sc);
    if (sc->rs) {
        /* no query still reads the trees: each holds a reference on the scene */
        for (uint32_t i = 0; i < sc->n_resident; i++) tdm_sched_mesh_remove(sc->engine, sc->rs->bvhs[i]);
        tdm_robot_scene_destroy(sc->rs);
        tdm_planning_scene_free(sc->ps);
        tdm_stored_robot_unref(sc->robot);
    } else {
        tdm_scene_destroy(sc->scene);
    }
    for (uint32_t i = 0; i < sc->n_meshes; i++) tdm_stored_mesh_unref(sc->meshes[i]);
    free(sc->meshes);
    tdm_owners_clear(&sc->entry.owners);
    free(sc->name);
    free(sc);
}

tdm_stored_scene *tdm_stored_scene_new_robot(const uint8_t id[TDM_ID_LEN], const char *name, tdm_robot_scene *rs,
                                             tdm_planning_scene *ps, tdm_stored_robot *robot)
{
    tdm_stored_scene *sc = calloc(1, sizeof *sc);
    if (!sc || !(sc->name = dupstr(name))) {
        free(sc);
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
        return NULL;
    }
    memcpy(sc->entry.id, id, TDM_ID_LEN);
    sc->scene = rs->scene;
    sc->rs = rs;
    sc->ps = ps;
    sc->robot = robot; /* the caller's reference and `scenes` count pass to sc */
    sc->refs = 1;
    return sc;
}

tdm_stored_robot *tdm_stored_robot_new(const uint8_t id[TDM_ID_LEN], const char *name, tdm_robot *robot,
                                       tdm_stored_mesh *const *meshes, uint32_t n)
{
    tdm_stored_robot *r = calloc(1, sizeof *r);
    if (!r) goto fail;
    r->name = dupstr(name);
    r->meshes = malloc(sizeof *r->meshes * (n ? n : 1));
    if (!r->name || !r->meshes) goto fail;
    if (n) memcpy(r->meshes, meshes, sizeof *meshes * n);
    qsort(r->meshes, n, sizeof *r->meshes, cmp_ptr);
    for (uint32_t i = 0; i < n; i++)
        if (i == 0 || r->meshes[i] != r->meshes[i - 1]) r->meshes[r->n_meshes++] = r->meshes[i];
    for (uint32_t i = 0; i < r->n_meshes; i++) {
        tdm_stored_mesh_ref(r->meshes[i]);
        r->meshes[i]->robots++;
    }
    memcpy(r->entry.id, id, TDM_ID_LEN);
    r->robot = robot;
    r->refs = 1;
    return r;
fail:
    if (r) {
        free(r->name);
        free(r->meshes);
        free(r);
    }
    tdm_robot_free(robot);
    return NULL;
}

void tdm_stored_robot_ref(tdm_stored_robot *r) { r->refs++; }

void tdm_stored_robot_retire(tdm_stored_robot *r)
{
    if (r->retired) return;
    r->retired = 1;
    for (uint32_t i = 0; i < r->n_meshes; i++) {
        assert(r->meshes[i]->robots > 0);
        r->meshes[i]->robots--;
    }
}

void tdm_stored_robot_unref(tdm_stored_robot *r)
{
    if (!r) return;
    assert(r->refs > 0);
    if (--r->refs > 0) return;
    assert(!r->entry.listed);
    forget(&r->entry, KIND_ROBOT);
    tdm_stored_robot_retire(r);
    tdm_robot_elems_destroy(r->elems);
    free(r->elems_refused);
    tdm_robot_free(r->robot);
    for (uint32_t i = 0; i < r->n_meshes; i++) tdm_stored_mesh_unref(r->meshes[i]);
    free(r->meshes);
    tdm_owners_clear(&r->entry.owners);
    free(r->name);
    free(r);
}

/* ---- the catalogue ---- */

tdm_catalog *tdm_catalog_new(void)
{
    tdm_catalog *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (table_init(&c->meshes) != 0 || table_init(&c->scenes) != 0 || table_init(&c->robots) != 0) goto fail;
    if (pthread_mutex_init(&c->lock, NULL) != 0) goto fail;
    return c;
fail:
    free(c->meshes.buckets);
    free(c->scenes.buckets);
    free(c->robots.buckets);
    free(c);
    return NULL;
}

void tdm_catalog_free(tdm_catalog *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    table_clear(&c->meshes);
    table_clear(&c->scenes);
    table_clear(&c->robots);
    pthread_mutex_unlock(&c->lock);
    /* scenes first: they hold references on robots and meshes; then robots */
    while (c->scene_head) {
        tdm_stored_scene *sc = c->scene_head;
        tdm_catalog_remove_scene(c, sc);
        tdm_stored_scene_unref(sc);
    }
    while (c->robot_head) {
        tdm_stored_robot *r = c->robot_head;
        tdm_catalog_remove_robot(c, r);
        tdm_stored_robot_unref(r);
    }
    while (c->mesh_head) {
        tdm_stored_mesh *m = c->mesh_head;
        tdm_catalog_remove_mesh(c, m);
        tdm_stored_mesh_unref(m);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->meshes.buckets);
    free(c->scenes.buckets);
    free(c->robots.buckets);
    free(c);
}

tdm_stored_mesh *tdm_catalog_find_mesh(tdm_catalog *c, const uint8_t id[TDM_ID_LEN])
{
    pthread_mutex_lock(&c->lock);
    tdm_catalog_entry *e = table_find(&c->meshes, id, WANT_LISTED);
    pthread_mutex_unlock(&c->lock);
    return (tdm_stored_mesh *)(void *)e; /* the entry is the object's first member */
}

tdm_stored_scene *tdm_catalog_find_scene(tdm_catalog *c, const uint8_t id[TDM_ID_LEN])
{
    pthread_mutex_lock(&c->lock);
    tdm_catalog_entry *e = table_find(&c->scenes, id, WANT_LISTED);
    pthread_mutex_unlock(&c->lock);
    return (tdm_stored_scene *)(void *)e;
}

/* Lists or unlists an entry under the lock. */
static void set_listed(tdm_catalog *c, table *t, tdm_catalog_entry *e, int listed)
{
    pthread_mutex_lock(&c->lock);
    assert(listed ? !e->listed && !table_find(t, e->id, WANT_LISTED) : e->listed);
    e->listed = (uint8_t)listed;
    settle(c, t, e);
    pthread_mutex_unlock(&c->lock);
}

void tdm_catalog_add_mesh(tdm_catalog *c, tdm_stored_mesh *m)
{
    set_listed(c, &c->meshes, &m->entry, 1);
    m->prev = c->mesh_tail;
    m->next = NULL;
    if (c->mesh_tail) c->mesh_tail->next = m;
    else c->mesh_head = m;
    c->mesh_tail = m;
    c->n_meshes++;
    c->bytes += m->bytes;
}

void tdm_catalog_remove_mesh(tdm_catalog *c, tdm_stored_mesh *m)
{
    set_listed(c, &c->meshes, &m->entry, 0);
    if (m->prev) m->prev->next = m->next;
    else c->mesh_head = m->next;
    if (m->next) m->next->prev = m->prev;
    else c->mesh_tail = m->prev;
    m->prev = m->next = NULL;
    c->n_meshes--;
    c->bytes -= m->bytes;
}

void tdm_catalog_add_scene(tdm_catalog *c, tdm_stored_scene *sc)
{
    assert(!sc->retired);
    set_listed(c, &c->scenes, &sc->entry, 1);
    sc->prev = c->scene_tail;
    sc->next = NULL;
    if (c->scene_tail) c->scene_tail->next = sc;
    else c->scene_head = sc;
    c->scene_tail = sc;
    c->n_scenes++;
    c->n_ephemeral += sc->entry.ephemeral;
}

void tdm_catalog_remove_scene(tdm_catalog *c, tdm_stored_scene *sc)
{
    set_listed(c, &c->scenes, &sc->entry, 0);
    if (sc->prev) sc->prev->next = sc->next;
    else c->scene_head = sc->next;
    if (sc->next) sc->next->prev = sc->prev;
    else c->scene_tail = sc->prev;
    sc->prev = sc->next = NULL;
    c->n_scenes--;
    c->n_ephemeral -= sc->entry.ephemeral;
}

tdm_stored_robot *tdm_catalog_find_robot(tdm_catalog *c, const uint8_t id[TDM_ID_LEN])
{
    pthread_mutex_lock(&c->lock);
    tdm_catalog_entry *e = table_find(&c->robots, id, WANT_LISTED);
    pthread_mutex_unlock(&c->lock);
    return (tdm_stored_robot *)(void *)e;
}

void tdm_catalog_add_robot(tdm_catalog *c, tdm_stored_robot *r)
{
    assert(!r->retired);
    set_listed(c, &c->robots, &r->entry, 1);
    r->prev = c->robot_tail;
    r->next = NULL;
    if (c->robot_tail) c->robot_tail->next = r;
    else c->robot_head = r;
    c->robot_tail = r;
    c->n_robots++;
}

void tdm_catalog_remove_robot(tdm_catalog *c, tdm_stored_robot *r)
{
    set_listed(c, &c->robots, &r->entry, 0);
    if (r->prev) r->prev->next = r->next;
    else c->robot_head = r->next;
    if (r->next) r->next->prev = r->prev;
    else c->robot_tail = r->prev;
    r->prev = r->next = NULL;
    c->n_robots--;
}

tdm_stored_robot *tdm_catalog_robots(tdm_catalog *c) { return c->robot_head; }
uint32_t tdm_catalog_n_robots(const tdm_catalog *c) { return c->n_robots; }
tdm_stored_mesh *tdm_catalog_meshes(tdm_catalog *c) { return c->mesh_head; }
tdm_stored_scene *tdm_catalog_scenes(tdm_catalog *c) { return c->scene_head; }
uint32_t tdm_catalog_n_meshes(const tdm_catalog *c) { return c->n_meshes; }
uint32_t tdm_catalog_n_scenes(const tdm_catalog *c) { return c->n_scenes; }
uint32_t tdm_catalog_n_ephemeral_scenes(const tdm_catalog *c) { return c->n_ephemeral; }
uint64_t tdm_catalog_bytes(const tdm_catalog *c) { return c->bytes; }
uint64_t tdm_catalog_reserved(const tdm_catalog *c) { return c->reserved; }
void tdm_catalog_reserve(tdm_catalog *c, uint64_t bytes) { c->reserved += bytes; }
void tdm_catalog_unreserve(tdm_catalog *c, uint64_t bytes)
{
    assert(c->reserved >= bytes);
    c->reserved -= bytes;
}

/* ---- on disk ---- */

static int on_disk(tdm_catalog *c, table *t, const uint8_t id[TDM_ID_LEN])
{
    pthread_mutex_lock(&c->lock);
    int found = table_find(t, id, WANT_ON_DISK) != NULL;
    pthread_mutex_unlock(&c->lock);
    return found;
}

static void written(tdm_catalog *c, table *t, tdm_catalog_entry *e)
{
    pthread_mutex_lock(&c->lock);
    e->on_disk = 1;
    settle(c, t, e);
    pthread_mutex_unlock(&c->lock);
}

static void removed(tdm_catalog *c, table *t, const uint8_t id[TDM_ID_LEN])
{
    pthread_mutex_lock(&c->lock);
    for (tdm_catalog_entry *e; (e = table_find(t, id, WANT_ON_DISK));) {
        e->on_disk = 0;
        settle(c, t, e);
    }
    pthread_mutex_unlock(&c->lock);
}

int tdm_catalog_mesh_on_disk(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]) { return on_disk(c, &c->meshes, id); }
int tdm_catalog_scene_on_disk(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]) { return on_disk(c, &c->scenes, id); }
void tdm_catalog_mesh_written(tdm_catalog *c, tdm_stored_mesh *m) { written(c, &c->meshes, &m->entry); }
void tdm_catalog_scene_written(tdm_catalog *c, tdm_stored_scene *sc) { written(c, &c->scenes, &sc->entry); }
void tdm_catalog_mesh_removed(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]) { removed(c, &c->meshes, id); }
void tdm_catalog_scene_removed(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]) { removed(c, &c->scenes, id); }
int tdm_catalog_robot_on_disk(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]) { return on_disk(c, &c->robots, id); }
void tdm_catalog_robot_written(tdm_catalog *c, tdm_stored_robot *r) { written(c, &c->robots, &r->entry); }
void tdm_catalog_robot_removed(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]) { removed(c, &c->robots, id); }
