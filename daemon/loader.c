#include "loader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "robot_build.h"

/* Owner records (owners.h) read first, by id, then handed to their objects. */
typedef struct owner_rec {
    uint8_t id[TDM_ID_LEN];
    uint8_t *buf;
    size_t len;
    int used;
} owner_rec;

typedef struct load_ctx {
    tdm_server *s;
    owner_rec *recs; /* sorted by id once read */
    size_t n, cap;
} load_ctx;

static int load_owner_rec(void *ctx, const tdm_datadir_item *it)
{
    load_ctx *L = ctx;
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 64;
        owner_rec *v = realloc(L->recs, sizeof *v * cap);
        if (!v) goto nomem;
        L->recs = v;
        L->cap = cap;
    }
    owner_rec *r = &L->recs[L->n];
    if (!(r->buf = malloc(it->canon_len ? it->canon_len : 1))) goto nomem;
    memcpy(r->buf, it->canon, it->canon_len);
    memcpy(r->id, it->id, TDM_ID_LEN);
    r->len = it->canon_len;
    r->used = 0;
    L->n++;
    return 0;
nomem:
    tdm_log_error("skipping %s: out of memory", it->path);
    return -1;
}

static int cmp_rec(const void *a, const void *b) { return memcmp(a, b, TDM_ID_LEN); } /* id first */

/* The loaded object e (its file named file_name, at path) gets its owners: its
 * record's, or the default tenant alone when it has none (data directories from
 * before tenants). An object whose record exists but cannot be read is not loaded
 * (it stays on disk): handing it to anyone could hand one tenant's object to
 * another. 0, or -1 after logging why. */
static int set_owners(load_ctx *L, tdm_catalog_entry *e, const char *file_name, const char *path)
{
    owner_rec *r = L->n ? bsearch(e->id, L->recs, L->n, sizeof *L->recs, cmp_rec) : NULL;
    int rc;
    if (r) {
        r->used = 1;
        rc = tdm_owners_decode(r->buf, r->len, L->s->tenants, &e->owners);
        if (rc == TDM_ECORRUPT) {
            tdm_log_error("skipping %s: its owner record is malformed (kept on disk, as the object)", path);
            return -1;
        }
    } else if (tdm_datadir_exists(L->s->datadir, TDM_DATADIR_OWNERS, e->id)) {
        tdm_log_error("skipping %s: its owner record could not be read (see above; both kept on disk)", path);
        return -1;
    } else {
        rc = tdm_owners_add(&e->owners, TDM_TENANT_DEFAULT, file_name);
    }
    if (rc != TDM_OK) tdm_log_error("skipping %s: out of memory", path);
    return rc == TDM_OK ? 0 : -1;
}

static int load_mesh(void *ctx, const tdm_datadir_item *it)
{
    load_ctx *L = ctx;
    tdm_server *s = L->s;
    uint32_t nv, nt;
    const float *verts;
    const uint32_t *tris;
    if (tdm_mesh_canon_parse(it->canon, it->canon_len, &nv, &nt, &verts, &tris) != 0 || nv == 0 || nt == 0) {
        tdm_log_error("skipping %s: malformed mesh content", it->path);
        return -1;
    }
    tdm_bvh *bvh = NULL;
    int rc = tdm_bvh_deserialize(it->blob, it->blob_len, &bvh);
    if (rc != TDM_OK) {
        tdm_log_error("skipping %s: tree: %s", it->path, tdm_strerror(rc));
        return -1;
    }
    if (bvh->n_tris != nt) {
        tdm_log_error("skipping %s: the tree has %u triangles, the mesh %u", it->path, bvh->n_tris, nt);
        tdm_bvh_free(bvh);
        return -1;
    }
    if (nv > s->cfg->max_vertices || nt > s->cfg->max_triangles)
        tdm_log_warn("%s: %u vertices, %u triangles: over today's limits, loaded anyway", it->path, nv, nt);
    tdm_stored_mesh *m = tdm_stored_mesh_new(it->id, it->name, nv, nt, it->canon_len + it->blob_len, bvh);
    if (!m) {
        tdm_log_error("skipping %s: out of memory", it->path);
        tdm_bvh_free(bvh);
        return -1;
    }
    if (tdm_catalog_find_mesh(s->catalog, it->id) || set_owners(L, &m->entry, it->name, it->path) != 0) {
        tdm_stored_mesh_unref(m); /* listed already cannot happen (one file per id); else out of memory */
        return -1;
    }
    /* before the loop runs: tdm_sched_mesh_add may block, which is fine here */
    rc = tdm_sched_mesh_add(s->engine, bvh);
    if (rc == TDM_OK) {
        m->engine = s->engine;
    } else {
        tdm_log_warn("%s: the %s engine cannot hold its tree on the device (%s): kept, and queries on scenes "
                     "using it run on the CPU engine", it->path, tdm_backend_name(tdm_sched_backend(s->engine)),
                     rc == TDM_EGPUMEM ? "device memory or the gpu-memory budget is full" : tdm_strerror(rc));
    }
    tdm_catalog_mesh_written(s->catalog, m);
    tdm_catalog_add_mesh(s->catalog, m);
    return 0;
}

static int load_scene(void *ctx, const tdm_datadir_item *it)
{
    load_ctx *L = ctx;
    tdm_server *s = L->s;
    tdm_canon_object *co = NULL;
    tdm_canon_pair *cp = NULL;
    uint32_t no = 0, na = 0;
    tdm_scene_obj *objs = NULL;
    tdm_stored_mesh **meshes = NULL;
    tdm_id_pair *allowed = NULL;
    tdm_scene *scene = NULL;
    int rc = -1;
    if (tdm_scene_canon_parse(it->canon, it->canon_len, &co, &no, &cp, &na) != 0) {
        tdm_log_error("skipping %s: malformed scene content", it->path);
        return -1;
    }
    objs = malloc(sizeof *objs * (no ? no : 1));
    meshes = malloc(sizeof *meshes * (no ? no : 1));
    allowed = malloc(sizeof *allowed * (na ? na : 1));
    if (!objs || !meshes || !allowed) {
        tdm_log_error("skipping %s: out of memory", it->path);
        goto out;
    }
    for (uint32_t i = 0; i < no; i++) {
        tdm_stored_mesh *m = tdm_catalog_find_mesh(s->catalog, co[i].mesh_id);
        if (!m) {
            char hex[2 * TDM_ID_LEN + 1];
            tdm_id_hex(co[i].mesh_id, hex);
            tdm_log_error("skipping %s: object %u uses mesh %s, which is not stored", it->path, co[i].id, hex);
            goto out;
        }
        meshes[i] = m;
        objs[i].id = co[i].id;
        objs[i].bvh = m->bvh;
        objs[i].movable = co[i].movable;
        objs[i].pose = tdm_xform_identity();
        if (!co[i].movable) {
            const double *p = co[i].pose;
            int finite = 1;
            for (int k = 0; k < 7; k++) finite &= isfinite(p[k]) != 0;
            tdm_quat q = {p[3], p[4], p[5], p[6]};
            if (!finite || !tdm_quat_is_unit(q)) {
                tdm_log_error("skipping %s: object %u has a malformed pose", it->path, co[i].id);
                goto out;
            }
            /* stored normalised: used as it is, so the transform is the one the put computed */
            objs[i].pose = tdm_xform_from_pose(tdm_d3(p[0], p[1], p[2]), q);
        }
    }
    for (uint32_t i = 0; i < na; i++) allowed[i] = (tdm_id_pair){cp[i].a, cp[i].b};
    tdm_scene_error serr;
    int e = tdm_scene_create(objs, no, allowed, na, &scene, &serr);
    if (e != TDM_OK) {
        tdm_log_error("skipping %s: %s", it->path, serr.msg);
        goto out;
    }
    tdm_stored_scene *sc = tdm_stored_scene_new(it->id, it->name, scene, meshes, no);
    scene = NULL;
    if (!sc) {
        tdm_log_error("skipping %s: out of memory", it->path);
        goto out;
    }
    if (set_owners(L, &sc->entry, it->name, it->path) != 0) {
        tdm_stored_scene_retire(sc);
        tdm_stored_scene_unref(sc);
        goto out;
    }
    tdm_catalog_scene_written(s->catalog, sc);
    tdm_catalog_add_scene(s->catalog, sc);
    rc = 0;
out:
    tdm_scene_destroy(scene);
    free(co);
    free(cp);
    free(objs);
    free(meshes);
    free(allowed);
    return rc;
}

static int load_robot(void *ctx, const tdm_datadir_item *it)
{
    load_ctx *L = ctx;
    tdm_server *s = L->s;
    const char *urdf, *srdf;
    size_t ulen, slen;
    tdm_canon_mesh_ref *refs = NULL;
    uint32_t n = 0;
    if (tdm_robot_canon_parse(it->canon, it->canon_len, &urdf, &ulen, &srdf, &slen, &refs, &n) != TDM_OK) {
        tdm_log_error("skipping %s: malformed robot content", it->path);
        return -1;
    }
    /* the parser wants terminated text; the filenames too (the resolver compares lengths, the
     * messages print them with %.*s) */
    char *u = malloc(ulen + 1), *sr = srdf ? malloc(slen + 1) : NULL;
    tdm_stored_mesh **meshes = malloc(sizeof *meshes * (n ? n : 1));
    tdm_robot *robot = NULL;
    int rc = -1;
    if (!u || (srdf && !sr) || !meshes) {
        tdm_log_error("skipping %s: out of memory", it->path);
        goto out;
    }
    memcpy(u, urdf, ulen);
    u[ulen] = 0;
    if (sr) {
        memcpy(sr, srdf, slen);
        sr[slen] = 0;
    }
    tdm_robot_fail f;
    if (tdm__robot_build(s->catalog, -1, u, ulen, sr, slen, refs, n, meshes, &robot, &f) != TDM_OK) {
        tdm_log_error("skipping %s: %s", it->path, f.msg);
        goto out;
    }
    tdm_stored_robot *r = tdm_stored_robot_new(it->id, it->name, robot, meshes, n);
    robot = NULL;
    if (!r) {
        tdm_log_error("skipping %s: out of memory", it->path);
        goto out;
    }
    if (set_owners(L, &r->entry, it->name, it->path) != 0) {
        tdm_stored_robot_retire(r);
        tdm_stored_robot_unref(r);
        goto out;
    }
    tdm_catalog_robot_written(s->catalog, r);
    tdm_catalog_add_robot(s->catalog, r);
    rc = 0;
out:
    tdm_robot_free(robot);
    free(u);
    free(sr);
    free(meshes);
    free(refs);
    return rc;
}

static int load_robot_scene(void *ctx, const tdm_datadir_item *it)
{
    load_ctx *L = ctx;
    tdm_server *s = L->s;
    uint8_t rid[TDM_ID_LEN];
    const char *yaml;
    size_t len;
    if (tdm_robot_scene_canon_parse(it->canon, it->canon_len, rid, &yaml, &len) != TDM_OK) {
        tdm_log_error("skipping %s: malformed robot scene content", it->path);
        return -1;
    }
    tdm_stored_robot *robot = tdm_catalog_find_robot(s->catalog, rid);
    if (!robot) {
        char hex[2 * TDM_ID_LEN + 1];
        tdm_id_hex(rid, hex);
        tdm_log_error("skipping %s: its robot %s is not stored", it->path, hex);
        return -1;
    }
    tdm_robot_fail f;
    tdm_robot_scene *rs;
    tdm_planning_scene *ps;
    /* no max_objects, max_scene_triangles or max_robot_triangles: a stored scene is loaded whatever
       the limits are now */
    if (tdm__robot_scene_build(s->datadir, robot, yaml, len, 0, 0, 0, &rs, &ps, &f) != TDM_OK) {
        tdm_log_error("skipping %s: %s", it->path, f.msg);
        return -1;
    }
    tdm_stored_robot_ref(robot); /* handed to the scene */
    robot->scenes++;
    tdm_stored_scene *sc = tdm_stored_scene_new_robot(it->id, it->name, rs, ps, robot);
    if (!sc) {
        robot->scenes--;
        tdm_stored_robot_unref(robot);
        tdm_log_error("skipping %s: out of memory", it->path);
        return -1;
    }
    if (set_owners(L, &sc->entry, it->name, it->path) != 0) {
        tdm_stored_scene_unref(sc);
        return -1;
    }
    sc->engine = s->engine;
    size_t added = 0;
    int rc_add = tdm_sched_meshes_add(s->engine, (const tdm_bvh *const *)rs->bvhs, rs->n_objects, &added);
    sc->n_resident = (uint32_t)added;
    if (rc_add != TDM_OK) {
        tdm_log_error("skipping %s: the engine cannot hold its trees", it->path);
        tdm_stored_scene_unref(sc);
        return -1;
    }
    tdm_catalog_scene_written(s->catalog, sc);
    tdm_catalog_add_scene(s->catalog, sc);
    return 0;
}

/* Records whose object is on disk under no kind: left by a crash between the record
 * and its object (datadir.h); removed. */
static void remove_orphans(load_ctx *L)
{
    static const tdm_datadir_kind kinds[] = {TDM_DATADIR_MESH, TDM_DATADIR_SCENE, TDM_DATADIR_ROBOT,
                                             TDM_DATADIR_ROBOT_SCENE};
    for (size_t i = 0; i < L->n; i++) {
        if (L->recs[i].used) continue;
        int found = 0;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            found |= tdm_datadir_exists(L->s->datadir, kinds[k], L->recs[i].id);
        if (found) continue; /* its object failed to load (logged): keep the record with it */
        char hex[2 * TDM_ID_LEN + 1], err[300];
        tdm_id_hex(L->recs[i].id, hex);
        if (tdm_datadir_remove(L->s->datadir, TDM_DATADIR_OWNERS, L->recs[i].id, err, sizeof err) == 0)
            tdm_log_info("removed the owner record %s: its object is not stored (an interrupted put or delete)", hex);
        else
            tdm_log_warn("%s", err);
    }
}

size_t tdm_loader_run(tdm_server *s)
{
    load_ctx L = {.s = s};
    size_t skipped = tdm_datadir_load(s->datadir, TDM_DATADIR_OWNERS, load_owner_rec, &L);
    if (L.n) qsort(L.recs, L.n, sizeof *L.recs, cmp_rec);
    skipped += tdm_datadir_load(s->datadir, TDM_DATADIR_MESH, load_mesh, &L);
    if (tdm_sched_backend(s->engine) != TDM_BACKEND_CPU && tdm_catalog_n_meshes(s->catalog) > 0) {
        tdm_sched_stats es;
        tdm_sched_get_stats(s->engine, &es);
        tdm_log_info("device: %u of %u stored meshes resident, %llu bytes of device memory held", es.device_meshes,
                     tdm_catalog_n_meshes(s->catalog), (unsigned long long)es.device_bytes);
    }
    skipped += tdm_datadir_load(s->datadir, TDM_DATADIR_SCENE, load_scene, &L);
    skipped += tdm_datadir_load(s->datadir, TDM_DATADIR_ROBOT, load_robot, &L);
    skipped += tdm_datadir_load(s->datadir, TDM_DATADIR_ROBOT_SCENE, load_robot_scene, &L);
    remove_orphans(&L);
    for (size_t i = 0; i < L.n; i++) free(L.recs[i].buf);
    free(L.recs);
    if (tdm_catalog_bytes(s->catalog) > s->cfg->max_meshes_bytes)
        tdm_log_warn("stored meshes take %llu bytes, over max_meshes_bytes %llu: new meshes will be refused",
                     (unsigned long long)tdm_catalog_bytes(s->catalog), (unsigned long long)s->cfg->max_meshes_bytes);
    return skipped;
}
