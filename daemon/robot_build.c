/* Robots and robot scenes from their stored text: see robot_build.h. */
#include "robot_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../geom/primitive.h"
#include "tandem.pb-c.h"

#define E(x) TANDEM__V1__ERROR_CODE__ERROR_##x

/* The resolver's view of the mesh table. */
typedef struct table_ctx {
    const tdm_canon_mesh_ref *refs;
    uint32_t n;
    uint8_t *used;
    int missing;
} table_ctx;

static int resolve(void *ctx, const char *uri, char **path, char *why, size_t whylen)
{
    table_ctx *t = ctx;
    tdm_canon_mesh_ref key = {uri, (uint32_t)strlen(uri), {0}};
    const tdm_canon_mesh_ref *r = bsearch(&key, t->refs, t->n, sizeof key, tdm_canon_mesh_ref_cmp);
    if (!r) {
        t->missing = 1;
        snprintf(why, whylen, "not in the request's mesh table (RobotPut.meshes has no such filename)");
        return TDM_EINDEX;
    }
    t->used[r - t->refs] = 1;
    char hex[2 * TDM_ID_LEN + 1];
    tdm_id_hex(r->mesh_id, hex);
    *path = strdup(hex);
    return *path ? TDM_OK : TDM_ENOMEM;
}

static int code_of(int rc)
{
    switch (rc) {
    case TDM_ENOMEM: return E(NO_MEMORY);
    case TDM_ERANGE: return E(LIMIT);
    case TDM_ENONFINITE: return E(NON_FINITE);
    case TDM_EEMPTY: return E(EMPTY);
    case TDM_EIO: return E(STORAGE);
    case TDM_EGPUMEM: return E(NO_MEMORY);
    default: return E(BAD_ROBOT);
    }
}

int tdm__robot_meshes(tdm_catalog *cat, int64_t tenant, const tdm_canon_mesh_ref *refs, uint32_t n,
                      tdm_stored_mesh **meshes, tdm_robot_fail *f)
{
    f->field = "";
    f->index = -1;
    f->msg[0] = 0;
    char hex[2 * TDM_ID_LEN + 1];
    for (uint32_t i = 0; i < n; i++) {
        meshes[i] = tdm_catalog_find_mesh(cat, refs[i].mesh_id);
        if (meshes[i] && tenant >= 0 && tdm_owners_find(&meshes[i]->entry.owners, (uint32_t)tenant) < 0)
            meshes[i] = NULL; /* another tenant's: as unknown */
        if (!meshes[i]) {
            tdm_id_hex(refs[i].mesh_id, hex);
            f->code = E(UNKNOWN_MESH);
            f->field = "meshes";
            f->index = (int64_t)i;
            snprintf(f->msg, sizeof f->msg, "mesh '%.*s': no stored mesh has id %s", (int)refs[i].filename_len,
                     refs[i].filename, hex);
            return TDM_EINDEX;
        }
    }
    return TDM_OK;
}

int tdm__robot_mesh_budget(const tdm_robot *robot, const tdm_canon_mesh_ref *refs, uint32_t n,
                           tdm_stored_mesh *const *meshes, uint32_t max, tdm_robot_fail *f)
{
    f->field = "meshes";
    f->index = -1;
    if (!max) return TDM_OK;
    /* the element trees' own sameness (a mesh element's path is its mesh id here) */
    uint32_t *owner = malloc(sizeof *owner * (robot->n_collisions ? robot->n_collisions : 1));
    if (!owner || tdm_robot_elem_owners(robot, owner) != TDM_OK) {
        free(owner);
        f->code = E(NO_MEMORY);
        snprintf(f->msg, sizeof f->msg, "out of memory for a robot");
        return TDM_ENOMEM;
    }
    uint64_t sum = 0;
    size_t distinct = 0;
    for (uint32_t e = 0; e < robot->n_collisions; e++) {
        const tdm_robot_collision *c = &robot->collisions[e];
        if (c->shape != TDM_SHAPE_MESH || owner[e] != e) continue;
        tdm_canon_mesh_ref key = {c->mesh_uri, (uint32_t)strlen(c->mesh_uri), {0}};
        const tdm_canon_mesh_ref *r = bsearch(&key, refs, n, sizeof key, tdm_canon_mesh_ref_cmp);
        if (!r) continue; /* the parse resolved every one: not reached */
        sum += meshes[r - refs]->n_tris;
        distinct++;
    }
    free(owner);
    if (sum <= max) return TDM_OK;
    f->code = E(LIMIT);
    snprintf(f->msg, sizeof f->msg,
             "the robot's collision meshes have %llu triangles (%zu distinct meshes and scales, each counted once), "
             "over max_robot_triangles %u",
             (unsigned long long)sum, distinct, max);
    return TDM_ERANGE;
}

int tdm__robot_parse_refs(const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                          const tdm_canon_mesh_ref *refs, uint32_t n, tdm_robot **out, tdm_robot_fail *f)
{
    *out = NULL;
    f->field = "";
    f->index = -1;
    f->msg[0] = 0;
    table_ctx t = {refs, n, calloc(n ? n : 1, 1), 0};
    if (!t.used) {
        f->code = E(NO_MEMORY);
        snprintf(f->msg, sizeof f->msg, "out of memory");
        return TDM_ENOMEM;
    }
    tdm_robot_source src = {urdf, urdf_len, "urdf", srdf, srdf_len, "srdf", resolve, &t};
    int rc = tdm_robot_parse(&src, out, f->msg, sizeof f->msg);
    if (rc != TDM_OK) {
        f->code = t.missing ? E(UNKNOWN_MESH) : code_of(rc);
        f->field = t.missing ? "meshes" : !strncmp(f->msg, "srdf:", 5) ? "srdf" : "urdf";
        free(t.used);
        return rc;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!t.used[i]) {
            f->code = E(BAD_REQUEST);
            f->field = "meshes";
            f->index = (int64_t)i;
            snprintf(f->msg, sizeof f->msg, "meshes[%u]: filename '%.*s' is not used by the URDF", i,
                     (int)refs[i].filename_len, refs[i].filename);
            free(t.used);
            tdm_robot_free(*out);
            *out = NULL;
            return TDM_EINVAL;
        }
    free(t.used);
    return TDM_OK;
}

int tdm__robot_build(tdm_catalog *cat, int64_t tenant, const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                     const tdm_canon_mesh_ref *refs, uint32_t n, tdm_stored_mesh **meshes, tdm_robot **out,
                     tdm_robot_fail *f)
{
    *out = NULL;
    int rc = tdm__robot_meshes(cat, tenant, refs, n, meshes, f);
    return rc != TDM_OK ? rc : tdm__robot_parse_refs(urdf, urdf_len, srdf, srdf_len, refs, n, out, f);
}

/* ---- robot scenes ---- */

typedef struct mesh_read {
    tdm_mesh *mesh;
    char why[200];
} mesh_read;

static int on_mesh_file(void *ctx, const tdm_datadir_item *it)
{
    mesh_read *m = ctx;
    uint32_t nv, nt;
    const float *v;
    const uint32_t *t;
    if (tdm_mesh_canon_parse(it->canon, it->canon_len, &nv, &nt, &v, &t) != TDM_OK) {
        snprintf(m->why, sizeof m->why, "its file in the data directory is malformed");
        return -1;
    }
    /* the canonical content is only byte-aligned */
    float *va = malloc(12 * (size_t)nv + 4);
    uint32_t *ta = malloc(12 * (size_t)nt + 4);
    int rc = -1;
    if (va && ta) {
        memcpy(va, v, 12 * (size_t)nv);
        memcpy(ta, t, 12 * (size_t)nt);
        rc = tdm_mesh_create(va, nv, ta, nt, NULL, &m->mesh, m->why, sizeof m->why) == TDM_OK ? 0 : -1;
    } else {
        snprintf(m->why, sizeof m->why, "out of memory");
    }
    free(va);
    free(ta);
    return rc;
}

/* robot_scene's mesh loader: `path` is a stored mesh's id in hex. */
static int load_stored_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    tdm_datadir *dir = ctx;
    uint8_t id[TDM_ID_LEN];
    *out = NULL;
    if (tdm_id_parse(path, id) != 0) {
        snprintf(err, errlen, "not a mesh id");
        return TDM_EINVAL;
    }
    mesh_read m = {NULL, "cannot be read from the data directory"};
    if (tdm_datadir_read(dir, TDM_DATADIR_MESH, id, on_mesh_file, &m) != 0) {
        tdm_mesh_free(m.mesh);
        snprintf(err, errlen, "stored mesh: %s", m.why);
        return TDM_EIO;
    }
    *out = m.mesh;
    return TDM_OK;
}

int tdm__robot_scene_build(tdm_datadir *dir, tdm_stored_robot *robot, const char *yaml, size_t len,
                           uint32_t max_objects, uint32_t max_triangles, uint32_t max_robot_triangles,
                           tdm_robot_scene **rs, tdm_planning_scene **ps, tdm_robot_fail *f)
{
    *rs = NULL;
    *ps = NULL;
    f->field = "world";
    f->index = -1;
    f->msg[0] = 0;
    int rc = tdm_planning_scene_parse(yaml, len, "world", ps, f->msg, sizeof f->msg);
    if (rc != TDM_OK) {
        f->code = code_of(rc);
        return rc;
    }
    size_t n = tdm_robot_scene_count(robot->robot, *ps);
    if (max_objects && n > max_objects) {
        snprintf(f->msg, sizeof f->msg,
                 "the robot scene has %zu objects (robot elements, attached and world shapes), over max_objects %u", n,
                 max_objects);
        f->code = code_of(TDM_ERANGE);
        tdm_planning_scene_free(*ps);
        *ps = NULL;
        return TDM_ERANGE;
    }
    tdm_robot_elems *el = __atomic_load_n(&robot->elems, __ATOMIC_ACQUIRE);
    const char *refused = max_robot_triangles ? __atomic_load_n(&robot->elems_refused, __ATOMIC_ACQUIRE) : NULL;
    if (!el && refused) { /* refused before: the limit is the server's, the robot's content fixed */
        snprintf(f->msg, sizeof f->msg, "%s", refused);
        rc = TDM_ERANGE;
    } else if (!el) {
        rc = tdm_robot_elems_create_limited(robot->robot, load_stored_mesh, dir, TDM_PRIMITIVE_TOLERANCE,
                                            max_robot_triangles, "max_robot_triangles", &el, f->msg, sizeof f->msg);
        if (rc == TDM_ERANGE && max_robot_triangles) { /* over it (or a scaled vertex over float): the same
                                                          robot is refused the same way every time */
            char *why = strdup(f->msg), *none = NULL;
            if (why && !__atomic_compare_exchange_n(&robot->elems_refused, &none, why, 0, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_ACQUIRE))
                free(why); /* another thread's refusal was kept first */
        }
        if (rc == TDM_OK) {
            tdm_robot_elems *none = NULL;
            if (!__atomic_compare_exchange_n(&robot->elems, &none, el, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                tdm_robot_elems_destroy(el); /* another thread's were published first */
                el = none;
            }
        }
    }
    if (rc == TDM_OK) {
        rc = tdm_robot_scene_create_limited(el, *ps, max_triangles, "max_scene_triangles", rs, f->msg, sizeof f->msg);
    }
    if (rc != TDM_OK) {
        f->code = code_of(rc);
        tdm_planning_scene_free(*ps);
        *ps = NULL;
    }
    return rc;
}
