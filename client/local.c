/* libtandem's local engine (tandem.h, part 5): robot scenes built here as tandemd builds
 * them, answered by Tandem's CPU engine on the caller's thread.
 *
 * tandemd builds a stored robot from the URDF and SRDF texts and the stored meshes its
 * table names (daemon/robot_build.c), and a robot scene from the planning scene's YAML
 * with robot/robot_scene.c. Here the same robot/ code builds them from the files
 * tdm_robot_put_files would upload: the URDF read with robot/urdf.c (the same mesh
 * resolution), each mesh file read once with tools/mesh_io.c (the same triangles it
 * uploads), the trees of the same elements and tolerance. The ids follow the rules of
 * proto/README.md (daemon/content_id.c, compiled in here), over the bytes tandemd would be
 * sent, so equal ids mean the same content. The engine is workpile/'s scheduler with the CPU
 * engine alone: one thread, its caller's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../daemon/content_id.h"
#include "../geom/primitive.h"
#include "../robot/planning_scene.h"
#include "../robot/robot_scene.h"
#include "../robot/urdf.h"
#include "../tools/io.h"
#include "../workpile/sched.h"
#include "internal.h"

/* tandemd's default limit on a query's counted contacts (its max_contacts), for max_contacts 0 */
#define LOCAL_DEFAULT_MAX_CONTACTS 1000000u

struct tdm_local {
    tdm_sched *sched;           /* made at the first query */
    tdm_sched_result *res;      /* scratch, grown */
    size_t res_cap;
    char err[1024];
};

struct tdm_local_robot {
    tdm_robot *robot;
    tdm_robot_elems *elems;
    uint8_t id[TDM_ID_BYTES];
};

struct tdm_local_scene {
    const tdm_local_robot *robot;
    tdm_robot_scene *rs;
    uint8_t id[TDM_ID_BYTES]; /* stored */
};

tdm_local *tdm_local_create(void) { return calloc(1, sizeof(tdm_local)); }

void tdm_local_free(tdm_local *l)
{
    if (!l) return;
    tdm_sched_destroy(l->sched);
    free(l->res);
    free(l);
}

const char *tdm_local_errstr(const tdm_local *l) { return l ? l->err : "no local engine"; }

static int fail(tdm_local *l, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(tdm_local *l, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tdm__vfmt(l->err, sizeof l->err, fmt, ap);
    va_end(ap);
    return code;
}

static int client_code(int tdm_rc) { return tdm_rc == TDM_ENOMEM ? TDM_CLIENT_ENOMEM : TDM_CLIENT_EINVAL; }

/* ---- robots -------------------------------------------------------------------------------- */

/* The robot's mesh files, each filename read once as tdm_robot_put_files reads it: what the
 * trees are built from and what the ids are computed over. */
typedef struct mesh_file {
    const char *uri;  /* the filename as written (the table's key), borrowed from the robot */
    const char *path; /* as resolved, borrowed */
    tdm_mesh *mesh;
} mesh_file;

typedef struct mesh_files {
    mesh_file *f;
    size_t n;
} mesh_files;

static const mesh_file *find_path(const mesh_files *mf, const char *path)
{
    for (size_t i = 0; i < mf->n; i++)
        if (!strcmp(mf->f[i].path, path)) return &mf->f[i];
    return NULL;
}

/* tdm_robot_mesh_loader over the files read: a copy, which the trees own */
static int load_read(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    const mesh_file *f = find_path(ctx, path);
    if (!f) {
        tdm__fmt(err, errlen, "mesh %s was not read", path);
        return TDM_EINVAL;
    }
    return tdm_mesh_create(f->mesh->verts, f->mesh->n_verts, f->mesh->tris, f->mesh->n_tris, NULL, out, err, errlen);
}

/* tdm__robot_meshes_read's callback: the mesh kept in mf */
static int keep_mesh(void *ctx, const tdm_robot_collision *k, tdm_mesh *m)
{
    mesh_files *mf = ctx;
    mf->f[mf->n++] = (mesh_file){k->mesh_uri, k->mesh_path, m};
    return 0;
}

/* The robot id tandemd computes (request_robot.c): over the texts and the table of
 * (filename, mesh id), sorted by filename. */
static int robot_id(tdm_local *l, const char *urdf_path, const char *srdf_path, const mesh_files *mf,
                    uint8_t id[TDM_ID_BYTES])
{
    char why[512];
    char *urdf = tdm__read_text(urdf_path, why, sizeof why), *srdf = NULL;
    tdm_canon_mesh_ref *refs = calloc(mf->n ? mf->n : 1, sizeof *refs);
    uint8_t *canon = NULL;
    size_t canon_len = 0;
    int rc = TDM_CLIENT_ENOMEM;
    if (!urdf || (srdf_path && !(srdf = tdm__read_text(srdf_path, why, sizeof why)))) {
        rc = fail(l, TDM_CLIENT_EINVAL, "%s", why);
        goto out;
    }
    if (!refs) goto nomem;
    for (size_t i = 0; i < mf->n; i++) {
        const tdm_mesh *m = mf->f[i].mesh;
        refs[i].filename = mf->f[i].uri;
        refs[i].filename_len = (uint32_t)strlen(mf->f[i].uri);
        if (tdm_mesh_id(m->verts, m->n_verts, m->tris, m->n_tris, refs[i].mesh_id) != TDM_OK) goto nomem;
    }
    qsort(refs, mf->n, sizeof *refs, tdm_canon_mesh_ref_cmp);
    if (tdm_robot_canon_build(urdf, strlen(urdf), srdf, srdf ? strlen(srdf) : 0, refs, (uint32_t)mf->n, &canon,
                              &canon_len) != TDM_OK ||
        tdm_sha256(canon, canon_len, id) != TDM_OK)
        goto nomem;
    rc = 0;
    goto out;
nomem:
    rc = fail(l, TDM_CLIENT_ENOMEM, "out of memory");
out:
    free(canon);
    free(refs);
    free(urdf);
    free(srdf);
    return rc;
}

int tdm_local_robot_load(tdm_local *l, const char *urdf_path, const char *srdf_path, tdm_local_robot **out)
{
    if (!l) return TDM_CLIENT_EINVAL;
    l->err[0] = 0;
    if (!out) return fail(l, TDM_CLIENT_EINVAL, "out is NULL");
    *out = NULL;
    if (!urdf_path) return fail(l, TDM_CLIENT_EINVAL, "urdf_path is NULL");
    tdm_local_robot *lr = calloc(1, sizeof *lr);
    if (!lr) return fail(l, TDM_CLIENT_ENOMEM, "out of memory");
    mesh_files mf = {NULL, 0};
    int rc = tdm_robot_load(urdf_path, srdf_path, &lr->robot, l->err, sizeof l->err);
    if (rc != TDM_OK) {
        rc = client_code(rc);
        goto fail;
    }
    mf.f = calloc(lr->robot->n_collisions ? lr->robot->n_collisions : 1, sizeof *mf.f);
    if (!mf.f) {
        rc = fail(l, TDM_CLIENT_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = tdm__robot_meshes_read(lr->robot, urdf_path, keep_mesh, &mf, l->err, sizeof l->err)) != 0 ||
        (rc = robot_id(l, urdf_path, srdf_path, &mf, lr->id)))
        goto fail;
    rc = tdm_robot_elems_create(lr->robot, load_read, &mf, TDM_PRIMITIVE_TOLERANCE, &lr->elems, l->err, sizeof l->err);
    if (rc != TDM_OK) {
        rc = client_code(rc);
        goto fail;
    }
    for (size_t i = 0; i < mf.n; i++) tdm_mesh_free(mf.f[i].mesh);
    free(mf.f);
    *out = lr;
    return 0;
fail:
    for (size_t i = 0; i < mf.n; i++) tdm_mesh_free(mf.f[i].mesh);
    free(mf.f);
    tdm_local_robot_free(lr);
    return rc;
}

void tdm_local_robot_free(tdm_local_robot *r)
{
    if (!r) return;
    tdm_robot_elems_destroy(r->elems);
    tdm_robot_free(r->robot);
    free(r);
}

void tdm_local_robot_id(const tdm_local_robot *r, uint8_t id[TDM_ID_BYTES]) { memcpy(id, r->id, TDM_ID_BYTES); }

uint32_t tdm_local_robot_joints(const tdm_local_robot *r) { return r->robot->n_active; }

/* ---- scenes -------------------------------------------------------------------------------- */

/* yaml (len bytes) parsed under `name` ("world", as tandemd names it, or the file's path) */
static int scene_create(tdm_local *l, const tdm_local_robot *r, const char *yaml, const char *name,
                        tdm_local_scene **out)
{
    tdm_local_scene *s = calloc(1, sizeof *s);
    if (!s) return fail(l, TDM_CLIENT_ENOMEM, "out of memory");
    s->robot = r;
    size_t len = strlen(yaml);
    tdm_planning_scene *ps = NULL;
    uint8_t *canon = NULL;
    size_t canon_len = 0;
    int rc = tdm_planning_scene_parse(yaml, len, name, &ps, l->err, sizeof l->err);
    if (rc == TDM_OK) rc = tdm_robot_scene_create_shared(r->elems, ps, &s->rs, l->err, sizeof l->err);
    tdm_planning_scene_free(ps);
    if (rc != TDM_OK) {
        free(s);
        return client_code(rc);
    }
    if (tdm_robot_scene_canon_build(r->id, yaml, len, &canon, &canon_len) != TDM_OK ||
        tdm_sha256(canon, canon_len, s->id) != TDM_OK) {
        free(canon);
        tdm_local_scene_free(s);
        return fail(l, TDM_CLIENT_ENOMEM, "out of memory");
    }
    free(canon);
    *out = s;
    return 0;
}

int tdm_local_scene_create(tdm_local *l, const tdm_local_robot *r, const char *world_yaml, tdm_local_scene **out)
{
    if (!l) return TDM_CLIENT_EINVAL;
    l->err[0] = 0;
    if (!out) return fail(l, TDM_CLIENT_EINVAL, "out is NULL");
    *out = NULL;
    if (!r || !world_yaml) return fail(l, TDM_CLIENT_EINVAL, "robot or world_yaml is NULL");
    return scene_create(l, r, world_yaml, "world", out);
}

int tdm_local_scene_create_file(tdm_local *l, const tdm_local_robot *r, const char *yaml_path, tdm_local_scene **out)
{
    if (!l) return TDM_CLIENT_EINVAL;
    l->err[0] = 0;
    if (!out) return fail(l, TDM_CLIENT_EINVAL, "out is NULL");
    *out = NULL;
    if (!r || !yaml_path) return fail(l, TDM_CLIENT_EINVAL, "robot or yaml_path is NULL");
    char *yaml = tdm__read_text(yaml_path, l->err, sizeof l->err);
    if (!yaml) return TDM_CLIENT_EINVAL;
    int rc = scene_create(l, r, yaml, yaml_path, out);
    free(yaml);
    return rc;
}

void tdm_local_scene_free(tdm_local_scene *s)
{
    if (!s) return;
    tdm_robot_scene_destroy(s->rs);
    free(s);
}

void tdm_local_scene_id(const tdm_local_scene *s, int ephemeral, uint8_t id[TDM_ID_BYTES])
{
    memcpy(id, s->id, TDM_ID_BYTES);
    if (ephemeral && tdm_ephemeral_id(id) != TDM_OK) memset(id, 0, TDM_ID_BYTES);
}

/* ---- queries ------------------------------------------------------------------------------- */

static int engine(tdm_local *l)
{
    if (l->sched) return 0;
    tdm_sched_config sc = tdm_sched_config_default();
    sc.kind = TDM_BACKEND_CPU;
    sc.threads = 1; /* the caller's */
    sc.lanes = 1;
    sc.calibrate = 0;
    sc.chunk_tasks = 65536; /* a few configurations a run */
    char why[320] = "";
    int rc = tdm_sched_create(&sc, &l->sched, why, sizeof why);
    if (rc != TDM_OK) return fail(l, client_code(rc), "Tandem's CPU engine: %s", why[0] ? why : "cannot start");
    return 0;
}

int tdm_local_query_configs(tdm_local *l, const tdm_local_scene *s, tdm_query_mode mode, const double *configs,
                            uint32_t n_joints, size_t n_queries, uint32_t max_contacts, tdm_query_result *results)
{
    if (!l) return TDM_CLIENT_EINVAL;
    l->err[0] = 0;
    if (!s || (n_queries && (!configs || !results))) return fail(l, TDM_CLIENT_EINVAL, "NULL argument");
    if (mode != TDM_QUERY_BOOL && mode != TDM_QUERY_CONTACTS) return fail(l, TDM_CLIENT_EINVAL, "unknown mode %d", mode);
    const tdm_robot *robot = s->robot->robot;
    if (n_joints != robot->n_active)
        return fail(l, TDM_CLIENT_EINVAL, "configs: %u values a configuration, the robot has %u active joints",
                    n_joints, robot->n_active);
    for (size_t i = 0; i < n_queries; i++)
        for (uint32_t j = 0; j < n_joints; j++)
            if (!isfinite(configs[i * n_joints + j]))
                return fail(l, TDM_CLIENT_EINVAL, "configs: query %zu: joint '%s' is not a finite number", i,
                            robot->joints[robot->active[j]].name);
    if (n_queries == 0) return 0;
    int rc = engine(l);
    if (rc) return rc;
    if (n_queries > SIZE_MAX / sizeof *l->res) return fail(l, TDM_CLIENT_ENOMEM, "out of memory");
    if (n_queries > l->res_cap) {
        tdm_sched_result *r = realloc(l->res, n_queries * sizeof *r);
        if (!r) return fail(l, TDM_CLIENT_ENOMEM, "out of memory");
        l->res = r;
        l->res_cap = n_queries;
    }
    const tdm_sched_query proto = {s->rs->scene, NULL, mode == TDM_QUERY_BOOL ? TDM_MODE_BOOL : TDM_MODE_CONTACTS,
                                   max_contacts ? max_contacts : LOCAL_DEFAULT_MAX_CONTACTS, NULL, NULL};
    rc = tdm_sched_run_configs(l->sched, &proto, &s->rs->kin, configs, n_queries, l->res);
    if (rc != TDM_OK) return fail(l, client_code(rc), "Tandem's CPU engine: %s", tdm_strerror(rc));
    for (size_t i = 0; i < n_queries; i++) {
        const tdm_sched_result *r = &l->res[i];
        results[i] = (tdm_query_result){r->colliding, r->truncated, r->contacts, r->colliding ? r->object_a : 0,
                                        r->colliding ? r->object_b : 0, 0, 0};
    }
    return 0;
}
