/* MoveIt planning scenes and motion-planning requests from YAML (planning_scene.h).
 *
 * One small reader per message type on top of robot/yaml_read.h, which streams
 * libyaml's events, tracks the YAML path for messages and enforces the limits.
 * Mappings are read through a table of the keys we know; checks that involve
 * several keys (lengths that must match, poses to compose) run once the mapping
 * has ended. f_NAME reads a key's value (a tdm__yaml_read_fn), item_NAME one
 * element of a list (a tdm__yaml_item_fn).
 *
 * Invariant that makes the one clean-up work: every array in the result grows
 * through tdm__yaml_grow(), which zeroes the new element, and no count covers an
 * element before it is zeroed; so tdm_planning_scene_free and
 * tdm_motion_request_free free a half-built result after any error, and that is
 * the only clean-up path.
 *
 * Everything read is schema-bound (at most ~10 levels deep); only skipped
 * elements meet arbitrary nesting, and they stop at TDM_PS_MAX_DEPTH. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "planning_scene.h"
#include "yaml_read.h"

static const tdm__yaml_limits limits = {
    .max_bytes = TDM_PS_MAX_FILE_BYTES, .max_bytes_name = "TDM_PS_MAX_FILE_BYTES",
    .max_depth = TDM_PS_MAX_DEPTH, .max_depth_name = "TDM_PS_MAX_DEPTH",
    .max_string = TDM_PS_MAX_NAME, .max_string_name = "TDM_PS_MAX_NAME",
};

/* ---- vectors, quaternions, poses ------------------------------------------------------ */

/* n numbers as a flow or block list in `names` order, or a mapping with those keys. */
static int read_vec(tdm__yaml *y, const yaml_event_t *ev, double *out, uint32_t n, const char *names)
{
    int rc;
    if (ev->type == YAML_MAPPING_START_EVENT) {
        tdm__yaml_field f[4];
        char keys[4][2];
        for (uint32_t i = 0; i < n; i++) {
            keys[i][0] = names[i];
            keys[i][1] = 0;
            f[i] = (tdm__yaml_field)TDM__YAML_FIELD(keys[i], tdm__yaml_read_double, &out[i]);
        }
        if ((rc = tdm__yaml_read_map(y, ev, f, n))) return rc;
        for (uint32_t i = 0; i < n; i++)
            if (!f[i].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no %c", names[i]);
        return TDM_OK;
    }
    char what[32];
    snprintf(what, sizeof what, "numbers (%s)", names);
    return tdm__yaml_read_tuple(y, ev, n, what, tdm__yaml_read_double, out, sizeof *out);
}

/* shape_msgs/Plane's coef: a, b, c, d. */
static int f_coef(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_tuple(y, ev, 4, "numbers (a, b, c, d)", tdm__yaml_read_double, dst, sizeof(double));
}

static int f_vec3(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    double v[3];
    int rc = read_vec(y, ev, v, 3, "xyz");
    if (rc == TDM_OK) *(tdm_dvec3 *)dst = tdm_d3(v[0], v[1], v[2]);
    return rc;
}

/* Normalised; refused unless within TDM_QUAT_UNIT_TOLERANCE of unit length. */
static int f_quat(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    double v[4];
    int rc = read_vec(y, ev, v, 4, "xyzw");
    if (rc) return rc;
    tdm_quat q = {v[0], v[1], v[2], v[3]};
    double norm = tdm_quat_norm(q);
    if (!tdm_quat_is_unit(q))
        return tdm__yaml_fail(y, &ev->start_mark, TDM_ERANGE, "quaternion norm %.6g is not 1 (tolerance %g)", norm,
                              TDM_QUAT_UNIT_TOLERANCE);
    q.x /= norm; q.y /= norm; q.z /= norm; q.w /= norm;
    *(tdm_quat *)dst = q;
    return TDM_OK;
}

/* geometry_msgs/Pose ({position, orientation}) or Transform ({translation, rotation}). */
static int read_rigid(tdm__yaml *y, const yaml_event_t *ev, tdm_xform *out, const char *tkey, const char *rkey)
{
    tdm_dvec3 t;
    tdm_quat q;
    tdm__yaml_field f[] = {TDM__YAML_FIELD(tkey, f_vec3, &t), TDM__YAML_FIELD(rkey, f_quat, &q)};
    if (!tdm__yaml_is_null(ev) && ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping");
    int rc = tdm__yaml_read_map(y, ev, f, 2);
    if (rc) return rc;
    for (int i = 0; i < 2; i++)
        if (!f[i].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no %s", f[i].key);
    *out = tdm_xform_from_pose(t, q);
    return TDM_OK;
}
static int f_pose(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return read_rigid(y, ev, dst, "position", "orientation");
}
static int f_transform(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return read_rigid(y, ev, dst, "translation", "rotation");
}

/* A list of poses or transforms into an array and its count. */
typedef struct xforms { tdm_xform *arr; uint32_t n; const char *t, *r; } xforms;
static int item_rigid(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    xforms *x = dst;
    int rc = TDM_OK;
    tdm_xform *a = tdm__yaml_grow(y, &ev->start_mark, x->arr, i, sizeof *a, TDM_PS_MAX_SHAPES, "poses", &rc);
    if (!a) return rc;
    x->arr = a;
    if ((rc = read_rigid(y, ev, &a[i], x->t, x->r))) return rc;
    x->n = i + 1;
    return TDM_OK;
}
static int f_rigids(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_rigid, dst);
}

/* ---- robot state ----------------------------------------------------------------- */

static int f_joint_state(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm_ps_robot_state *st = dst;
    tdm__yaml_list names = {TDM__YAML_STRINGS, NULL, 0, TDM_PS_MAX_JOINTS, "joints"};
    tdm__yaml_list pos = {TDM__YAML_DOUBLES, NULL, 0, TDM_PS_MAX_JOINTS, "positions"};
    tdm__yaml_field f[] = {TDM__YAML_FIELD("name", tdm__yaml_read_list, &names),
                           TDM__YAML_FIELD("position", tdm__yaml_read_list, &pos)};
    int rc = tdm__yaml_read_map(y, ev, f, 2);
    st->joint_names = names.arr; /* the state owns them from here, whatever happened */
    st->n_joints = names.n;
    st->positions = pos.arr;
    if (rc) return rc;
    if (names.n != pos.n)
        return tdm__yaml_fail_field(y, &f[1], TDM_EFORMAT, "%u positions for %u names", pos.n, names.n);
    return tdm__yaml_check_distinct(y, &f[0], st->joint_names, st->n_joints);
}

static int f_multi_dof(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm_ps_robot_state *st = dst;
    tdm__yaml_list names = {TDM__YAML_STRINGS, NULL, 0, TDM_PS_MAX_JOINTS, "multi-DOF joints"};
    xforms tf = {NULL, 0, "translation", "rotation"};
    tdm__yaml_field f[] = {TDM__YAML_FIELD("joint_names", tdm__yaml_read_list, &names),
                           TDM__YAML_FIELD("transforms", f_rigids, &tf)};
    int rc = tdm__yaml_read_map(y, ev, f, 2);
    st->multi_dof_names = names.arr;
    st->n_multi_dof = names.n;
    st->multi_dof = tf.arr;
    if (rc) return rc;
    if (names.n != tf.n)
        return tdm__yaml_fail_field(y, &f[1], TDM_EFORMAT, "%u transforms for %u joint_names", tf.n, names.n);
    return tdm__yaml_check_distinct(y, &f[0], st->multi_dof_names, st->n_multi_dof);
}

static int f_robot_state(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm__yaml_field f[] = {TDM__YAML_FIELD("joint_state", f_joint_state, dst),
                           TDM__YAML_FIELD("multi_dof_joint_state", f_multi_dof, dst),
                           TDM__YAML_FIELD("attached_collision_objects", tdm__yaml_read_empty,
                                           "attached collision objects")};
    return tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
}

/* ---- allowed-collision matrix ------------------------------------------------------ */

typedef struct acm_row { uint8_t *v; uint32_t n; yaml_mark_t mark; } acm_row;
typedef struct acm_rows { acm_row *arr; uint32_t n; } acm_rows;

/* A row: a list of booleans (MBM) or moveit_msgs/AllowedCollisionEntry {enabled: [...]}. */
static int item_acm_row(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    acm_rows *rows = dst;
    int rc = TDM_OK;
    acm_row *a = tdm__yaml_grow(y, &ev->start_mark, rows->arr, i, sizeof *a, TDM_PS_MAX_ACM_ENTRIES, "rows", &rc);
    if (!a) return rc;
    rows->arr = a;
    rows->n = i + 1;
    tdm__yaml_list l = {TDM__YAML_BOOLS, NULL, 0, TDM_PS_MAX_ACM_ENTRIES, "values in a row"};
    if (ev->type == YAML_MAPPING_START_EVENT) {
        tdm__yaml_field f[] = {TDM__YAML_FIELD("enabled", tdm__yaml_read_list, &l)};
        rc = tdm__yaml_read_map(y, ev, f, 1);
    } else {
        rc = tdm__yaml_read_list(y, ev, &l);
    }
    a[i] = (acm_row){l.arr, l.n, ev->start_mark};
    return rc;
}
static int f_acm_rows(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_acm_row, dst);
}

static int acm_check(tdm__yaml *y, tdm_ps_acm *acm, const tdm__yaml_field *f, const acm_rows *rows,
                     uint32_t n_default_values)
{
    const tdm__yaml_field *names = &f[0], *values = &f[1];
    uint32_t n = acm->n;
    int rc = tdm__yaml_check_distinct(y, names, acm->names, n);
    if (rc) return rc;
    if (rows->n != n) return tdm__yaml_fail_field(y, values, TDM_EFORMAT, "%u rows for %u entry_names", rows->n, n);
    size_t m = tdm__yaml_push(y, values->key, 0);
    for (uint32_t i = 0; i < n && rc == TDM_OK; i++)
        if (rows->arr[i].n != n) {
            tdm__yaml_push(y, NULL, i);
            rc = tdm__yaml_fail(y, &rows->arr[i].mark, TDM_EFORMAT, "%u values for %u entry_names", rows->arr[i].n, n);
        }
    for (uint32_t i = 0; i < n && rc == TDM_OK; i++)
        for (uint32_t j = 0; j < i && rc == TDM_OK; j++)
            if (rows->arr[i].v[j] != rows->arr[j].v[i]) {
                tdm__yaml_push(y, NULL, i);
                tdm__yaml_push(y, NULL, j);
                rc = tdm__yaml_fail(y, &rows->arr[i].mark, TDM_EFORMAT,
                                    "is %s but entry_values[%u][%u] is %s: not symmetric",
                                    rows->arr[i].v[j] ? "true" : "false", j, i, rows->arr[j].v[i] ? "true" : "false");
            }
    tdm__yaml_pop(y, m);
    if (rc) return rc;
    if (n > 0) {
        acm->allowed = malloc((size_t)n * n);
        if (!acm->allowed) return tdm__yaml_fail(y, &values->mark, TDM_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            memcpy(acm->allowed + (size_t)i * n, rows->arr[i].v, n);
            acm->allowed[(size_t)i * n + i] = 0; /* MoveIt ignores the diagonal */
        }
    }
    if (n_default_values != acm->n_defaults)
        return tdm__yaml_fail_field(y, &f[3], TDM_EFORMAT, "%u values for %u default_entry_names", n_default_values,
                                    acm->n_defaults);
    return tdm__yaml_check_distinct(y, &f[2], acm->default_names, acm->n_defaults);
}

/* qsort has no context argument in C11: the pairs (name, index) are sorted. */
typedef struct named { const char *name; uint32_t index; } named;
static int cmp_named(const void *x, const void *y)
{
    return strcmp(((const named *)x)->name, ((const named *)y)->name);
}
uint32_t *tdm_ps_name_order(char *const *names, uint32_t n)
{
    uint32_t *o = malloc(((size_t)n + 1) * sizeof *o);
    named *v = malloc(((size_t)n + 1) * sizeof *v);
    if (!o || !v) {
        free(o);
        free(v);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) v[i] = (named){names[i], i};
    qsort(v, n, sizeof *v, cmp_named);
    for (uint32_t i = 0; i < n; i++) o[i] = v[i].index;
    free(v);
    return o;
}

static int f_acm(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm_ps_acm *acm = dst;
    tdm__yaml_list names = {TDM__YAML_STRINGS, NULL, 0, TDM_PS_MAX_ACM_ENTRIES, "entry_names"};
    tdm__yaml_list dnames = {TDM__YAML_STRINGS, NULL, 0, TDM_PS_MAX_ACM_ENTRIES, "default_entry_names"};
    tdm__yaml_list dvalues = {TDM__YAML_BOOLS, NULL, 0, TDM_PS_MAX_ACM_ENTRIES, "default_entry_values"};
    acm_rows rows = {NULL, 0};
    tdm__yaml_field f[] = {TDM__YAML_FIELD("entry_names", tdm__yaml_read_list, &names),
                           TDM__YAML_FIELD("entry_values", f_acm_rows, &rows),
                           TDM__YAML_FIELD("default_entry_names", tdm__yaml_read_list, &dnames),
                           TDM__YAML_FIELD("default_entry_values", tdm__yaml_read_list, &dvalues)};
    int rc = tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
    acm->names = names.arr;
    acm->n = names.n;
    acm->default_names = dnames.arr;
    acm->n_defaults = dnames.n;
    acm->default_allowed = dvalues.arr;
    if (rc == TDM_OK) rc = acm_check(y, acm, f, &rows, dvalues.n);
    if (rc == TDM_OK) {
        acm->by_name = tdm_ps_name_order(acm->names, acm->n);
        acm->defaults_by_name = tdm_ps_name_order(acm->default_names, acm->n_defaults);
        if (!acm->by_name || !acm->defaults_by_name)
            rc = tdm__yaml_fail(y, &ev->start_mark, TDM_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < rows.n; i++) free(rows.arr[i].v);
    free(rows.arr);
    return rc;
}

/* ---- collision objects ------------------------------------------------------------- */

static int f_header(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm__yaml_field f[] = {TDM__YAML_FIELD("frame_id", tdm__yaml_read_string, dst)};
    return tdm__yaml_read_map(y, ev, f, 1);
}

/* The scalar is `name`, in any case (MoveIt's constants are upper case, MBM's types lower). */
static int name_is(const yaml_event_t *ev, const char *name)
{
    return ev->data.scalar.length == strlen(name) && strcasecmp(tdm__yaml_sval(ev), name) == 0;
}

static int f_operation(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    (void)dst;
    static const char *const names[4] = {"ADD", "REMOVE", "APPEND", "MOVE"};
    if (ev->type != YAML_SCALAR_EVENT) return tdm__yaml_bad_kind(y, ev, "an operation");
    for (uint32_t i = 0; i < 4; i++) {
        char num[2] = {(char)('0' + i), 0};
        if (!tdm__yaml_sval_is(ev, num) && !name_is(ev, names[i])) continue;
        if (i == 0) return TDM_OK;
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT,
                              "operation %s (%u) is not supported: the file is read as a whole scene, "
                              "every object added",
                              names[i], i);
    }
    return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "unknown operation '%.40s'", tdm__yaml_sval(ev));
}

static int f_primitive_type(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    static const char *const names[6] = {NULL, "box", "sphere", "cylinder", "cone", "prism"};
    if (ev->type != YAML_SCALAR_EVENT) return tdm__yaml_bad_kind(y, ev, "a primitive type");
    for (int i = 1; i < 6; i++) {
        char num[2] = {(char)('0' + i), 0};
        if (!tdm__yaml_sval_is(ev, num) && !name_is(ev, names[i])) continue;
        if (i >= 5)
            return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT,
                                  "%s primitives are not supported (box, sphere, cylinder, cone)", names[i]);
        *(tdm_ps_primitive_type *)dst = (tdm_ps_primitive_type)i;
        return TDM_OK;
    }
    return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "unknown primitive type '%.40s' (box, sphere, cylinder, cone)",
                          tdm__yaml_sval(ev));
}

/* Names read so far, their items' indices kept in name order, so that each new name is
 * checked in O(log n) comparisons: thousands of long ids alike cost no n^2 string compares. */
typedef struct seen_names { uint32_t *idx; uint32_t n, cap; } seen_names;

/* The name of item i of a list at base: a char * at offset off in items of stride bytes. */
static const char *name_at(const void *base, size_t stride, size_t off, uint32_t i)
{
    return *(char *const *)((const char *)base + (size_t)i * stride + off);
}

/* Item i's name seen: -1 when it is new (then kept), else the index of the item that had it
 * first; -2 when out of memory. */
static int64_t seen_add(seen_names *sn, const void *base, size_t stride, size_t off, uint32_t i)
{
    const char *name = name_at(base, stride, off, i);
    uint32_t lo = 0, hi = sn->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name_at(base, stride, off, sn->idx[mid]), name);
        if (c == 0) return sn->idx[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    if (sn->n == sn->cap) {
        uint32_t cap = sn->cap ? 2 * sn->cap : 16;
        uint32_t *v = realloc(sn->idx, (size_t)cap * sizeof *v);
        if (!v) return -2;
        sn->idx = v;
        sn->cap = cap;
    }
    memmove(sn->idx + lo + 1, sn->idx + lo, (size_t)(sn->n - lo) * sizeof *sn->idx);
    sn->idx[lo] = i;
    sn->n++;
    return -1;
}

/* The scene being read, and what is counted across its objects. */
typedef struct scene_build {
    tdm_planning_scene *s;
    uint32_t n_shapes; /* primitives and meshes so far, all objects */
    seen_names world_ids, attached_ids;
} scene_build;

typedef struct object_build {
    tdm_ps_object *o;
    uint32_t *n_shapes; /* the scene's */
    xforms prim_poses, mesh_poses, plane_poses;
} object_build;

/* One more primitive or mesh, refused past TDM_PS_MAX_SHAPES in the scene. */
static int count_shape(tdm__yaml *y, const yaml_event_t *ev, object_build *b)
{
    if (*b->n_shapes >= TDM_PS_MAX_SHAPES)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_ERANGE, "more than %u shapes in the scene (TDM_PS_MAX_SHAPES)",
                              TDM_PS_MAX_SHAPES);
    ++*b->n_shapes;
    return TDM_OK;
}

static const char *const type_name[5] = {NULL, "box", "sphere", "cylinder", "cone"};
static const uint32_t type_dims[5] = {0, 3, 1, 2, 2};
static const char *const type_form[5] = {NULL, "[x, y, z]", "[radius]", "[height, radius]", "[height, radius]"};
static const char *const dim_name[5][3] = {{NULL}, {"x", "y", "z"}, {"radius"}, {"height", "radius"}, {"height", "radius"}};

static int item_primitive(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_ps_object *o = ((object_build *)dst)->o;
    int rc = count_shape(y, ev, dst);
    if (rc) return rc;
    tdm_ps_primitive *a =
        tdm__yaml_grow(y, &ev->start_mark, o->primitives, i, sizeof *a, TDM_PS_MAX_SHAPES, "primitives", &rc);
    if (!a) return rc;
    o->primitives = a;
    o->n_primitives = i + 1;
    tdm_ps_primitive *p = &a[i];
    tdm__yaml_list dims = {TDM__YAML_DOUBLES, NULL, 0, 16, "dimensions"};
    tdm__yaml_field f[] = {TDM__YAML_FIELD("type", f_primitive_type, &p->type),
                           TDM__YAML_FIELD("dimensions", tdm__yaml_read_list, &dims)};
    if (!tdm__yaml_is_null(ev) && ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping");
    rc = tdm__yaml_read_map(y, ev, f, 2);
    if (rc == TDM_OK && !f[0].seen) rc = tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no type");
    if (rc == TDM_OK && !f[1].seen) rc = tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no dimensions");
    if (rc == TDM_OK && dims.n != type_dims[p->type])
        rc = tdm__yaml_fail_field(y, &f[1], TDM_EFORMAT, "a %s needs %u dimension%s %s, got %u", type_name[p->type],
                                  type_dims[p->type], type_dims[p->type] > 1 ? "s" : "", type_form[p->type], dims.n);
    for (uint32_t k = 0; rc == TDM_OK && k < dims.n; k++) {
        double d = ((double *)dims.arr)[k];
        if (d < 0) {
            size_t m = tdm__yaml_push(y, "dimensions", 0);
            tdm__yaml_push(y, NULL, k);
            rc = tdm__yaml_fail(y, &f[1].mark, TDM_ERANGE, "the %s's %s is negative: %g", type_name[p->type],
                                dim_name[p->type][k], d);
            tdm__yaml_pop(y, m);
        }
        p->dims[k] = d;
    }
    if (rc == TDM_OK) p->n_dims = (int)dims.n;
    free(dims.arr);
    return rc;
}
static int f_primitives(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_primitive, dst);
}

/* ---- meshes ------------------------------------------------------------------ */

static int item_vertex(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_ps_mesh *m = dst;
    int rc = TDM_OK;
    double *a =
        tdm__yaml_grow(y, &ev->start_mark, m->verts, i, 3 * sizeof *a, TDM_PS_MAX_MESH_VERTICES, "vertices", &rc);
    if (!a) return rc;
    m->verts = a;
    if ((rc = read_vec(y, ev, a + 3 * (size_t)i, 3, "xyz"))) return rc;
    m->n_verts = i + 1;
    return TDM_OK;
}
static int f_vertices(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_vertex, dst);
}

/* Three vertex indices: a list, or shape_msgs/MeshTriangle {vertex_indices: [...]}. */
static int f_index3(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_tuple(y, ev, 3, "vertex indices", tdm__yaml_read_uint, dst, sizeof(uint32_t));
}

static int item_triangle(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_ps_mesh *m = dst;
    int rc = TDM_OK;
    uint32_t *a =
        tdm__yaml_grow(y, &ev->start_mark, m->tris, i, 3 * sizeof *a, TDM_PS_MAX_MESH_TRIANGLES, "triangles", &rc);
    if (!a) return rc;
    m->tris = a;
    if (ev->type == YAML_MAPPING_START_EVENT) {
        tdm__yaml_field f[] = {TDM__YAML_FIELD("vertex_indices", f_index3, a + 3 * (size_t)i)};
        if ((rc = tdm__yaml_read_map(y, ev, f, 1))) return rc;
        if (!f[0].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no vertex_indices");
    } else if ((rc = f_index3(y, ev, a + 3 * (size_t)i))) {
        return rc;
    }
    m->n_tris = i + 1;
    return TDM_OK;
}
static int f_triangles(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_triangle, dst);
}

static int item_mesh(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_ps_object *o = ((object_build *)dst)->o;
    int rc = count_shape(y, ev, dst);
    if (rc) return rc;
    tdm_ps_mesh *a = tdm__yaml_grow(y, &ev->start_mark, o->meshes, i, sizeof *a, TDM_PS_MAX_SHAPES, "meshes", &rc);
    if (!a) return rc;
    o->meshes = a;
    o->n_meshes = i + 1; /* zeroed: freeable from here */
    tdm_ps_mesh *m = &a[i];
    tdm__yaml_field f[] = {TDM__YAML_FIELD("vertices", f_vertices, m), TDM__YAML_FIELD("triangles", f_triangles, m)};
    if (!tdm__yaml_is_null(ev) && ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping");
    if ((rc = tdm__yaml_read_map(y, ev, f, 2))) return rc;
    if (m->n_tris == 0) return tdm__yaml_fail(y, &ev->start_mark, TDM_EEMPTY, "a mesh without triangles");
    for (size_t k = 0; k < 3 * (size_t)m->n_tris; k++)
        if (m->tris[k] >= m->n_verts) {
            size_t mk = tdm__yaml_push(y, "triangles", 0);
            tdm__yaml_push(y, NULL, (uint32_t)(k / 3));
            rc = tdm__yaml_fail(y, &f[1].mark, TDM_EINDEX, "vertex index %u is past the %u vertices", m->tris[k],
                                m->n_verts);
            tdm__yaml_pop(y, mk);
            return rc;
        }
    return TDM_OK;
}
static int f_meshes(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_mesh, dst);
}

/* ---- planes ------------------------------------------------------------------ */

static int item_plane(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_ps_object *o = ((object_build *)dst)->o;
    int rc = count_shape(y, ev, dst);
    if (rc) return rc;
    tdm_ps_plane *a = tdm__yaml_grow(y, &ev->start_mark, o->planes, i, sizeof *a, TDM_PS_MAX_SHAPES, "planes", &rc);
    if (!a) return rc;
    o->planes = a;
    o->n_planes = i + 1;
    tdm__yaml_field f[] = {TDM__YAML_FIELD("coef", f_coef, a[i].coef)};
    if (ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping (shape_msgs/Plane)");
    if ((rc = tdm__yaml_read_map(y, ev, f, 1))) return rc;
    if (!f[0].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no coef");
    if (a[i].coef[0] == 0 && a[i].coef[1] == 0 && a[i].coef[2] == 0)
        return tdm__yaml_fail_field(y, &f[0], TDM_ERANGE, "the plane's normal (a, b, c) is zero");
    return TDM_OK;
}
static int f_planes(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_plane, dst);
}

/* ---- objects, world, scene ----------------------------------------------------------- */

/* The checks that need the whole object: id, matching pose lists, poses composed.
 * Its id's uniqueness is the caller's to check (world and attached objects apart). */
static int object_finish(tdm__yaml *y, const yaml_event_t *ev, const tdm__yaml_field *f, const object_build *b)
{
    tdm_ps_object *o = b->o;
    const tdm__yaml_field *id = &f[0], *prims = &f[4], *prim_poses = &f[5], *meshes = &f[6], *mesh_poses = &f[7],
                          *planes = &f[8], *plane_poses = &f[9];
    if (!id->seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no id");
    if (!o->id[0]) return tdm__yaml_fail_field(y, id, TDM_EFORMAT, "empty id");
    if (b->prim_poses.n != o->n_primitives)
        return tdm__yaml_fail_field(y, prim_poses->seen ? prim_poses : prims, TDM_EFORMAT,
                                    "%u primitive_poses for %u primitives", b->prim_poses.n, o->n_primitives);
    if (b->mesh_poses.n != o->n_meshes)
        return tdm__yaml_fail_field(y, mesh_poses->seen ? mesh_poses : meshes, TDM_EFORMAT,
                                    "%u mesh_poses for %u meshes", b->mesh_poses.n, o->n_meshes);
    if (b->plane_poses.n != o->n_planes)
        return tdm__yaml_fail_field(y, plane_poses->seen ? plane_poses : planes, TDM_EFORMAT,
                                    "%u plane_poses for %u planes", b->plane_poses.n, o->n_planes);
    if (o->n_primitives + o->n_meshes + o->n_planes == 0)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EEMPTY, "an object without primitives, meshes or planes");
    if (o->frame_id && !o->frame_id[0]) {
        free(o->frame_id);
        o->frame_id = NULL;
    }
    o->has_pose = f[2].seen;
    for (uint32_t k = 0; k < o->n_primitives; k++) o->primitives[k].pose = tdm_xform_mul(&o->pose, &b->prim_poses.arr[k]);
    for (uint32_t k = 0; k < o->n_meshes; k++) o->meshes[k].pose = tdm_xform_mul(&o->pose, &b->mesh_poses.arr[k]);
    for (uint32_t k = 0; k < o->n_planes; k++) o->planes[k].pose = tdm_xform_mul(&o->pose, &b->plane_poses.arr[k]);
    return TDM_OK;
}

/* An object's subframes (read into it): as many poses as names, names not empty and distinct;
 * their order by name kept for lookups. */
static int subframes_finish(tdm__yaml *y, const tdm__yaml_field *names, const tdm__yaml_field *poses,
                            uint32_t n_poses, tdm_ps_object *o)
{
    if (n_poses != o->n_subframes)
        return tdm__yaml_fail_field(y, poses->seen ? poses : names, TDM_EFORMAT, "%u subframe_poses for %u subframe_names",
                                    n_poses, o->n_subframes);
    if (!o->n_subframes) return TDM_OK;
    for (uint32_t k = 0; k < o->n_subframes; k++)
        if (!o->subframe_names[k][0]) {
            size_t m = tdm__yaml_push(y, names->key, 0);
            tdm__yaml_push(y, NULL, k);
            int rc = tdm__yaml_fail(y, &names->mark, TDM_EFORMAT, "an empty subframe name");
            tdm__yaml_pop(y, m);
            return rc;
        }
    int rc = tdm__yaml_check_distinct(y, names, o->subframe_names, o->n_subframes);
    if (rc == TDM_OK && !(o->subframes_by_name = tdm_ps_name_order(o->subframe_names, o->n_subframes)))
        rc = tdm__yaml_fail(y, &names->mark, TDM_ENOMEM, "out of memory");
    return rc;
}

/* One moveit_msgs/CollisionObject mapping into *o (zeroed by its array's growth);
 * *id_field receives the id's field, for the caller's uniqueness check. */
static int read_object(tdm__yaml *y, const yaml_event_t *ev, tdm_ps_object *o, uint32_t *n_shapes,
                       tdm__yaml_field *id_field)
{
    o->pose = tdm_xform_identity();
    object_build b = {o, n_shapes, {NULL, 0, "position", "orientation"}, {NULL, 0, "position", "orientation"},
                      {NULL, 0, "position", "orientation"}};
    tdm__yaml_list sub_names = {TDM__YAML_STRINGS, NULL, 0, TDM_PS_MAX_SHAPES, "subframe names"};
    xforms sub_poses = {NULL, 0, "position", "orientation"};
    tdm__yaml_field f[] = {TDM__YAML_FIELD("id", tdm__yaml_read_string, &o->id),
                           TDM__YAML_FIELD("header", f_header, &o->frame_id),
                           TDM__YAML_FIELD("pose", f_pose, &o->pose),
                           TDM__YAML_FIELD("operation", f_operation, NULL),
                           TDM__YAML_FIELD("primitives", f_primitives, &b),
                           TDM__YAML_FIELD("primitive_poses", f_rigids, &b.prim_poses),
                           TDM__YAML_FIELD("meshes", f_meshes, &b),
                           TDM__YAML_FIELD("mesh_poses", f_rigids, &b.mesh_poses),
                           TDM__YAML_FIELD("planes", f_planes, &b),
                           TDM__YAML_FIELD("plane_poses", f_rigids, &b.plane_poses),
                           TDM__YAML_FIELD("subframe_names", tdm__yaml_read_list, &sub_names),
                           TDM__YAML_FIELD("subframe_poses", f_rigids, &sub_poses)};
    if (ev->type != YAML_MAPPING_START_EVENT)
        return tdm__yaml_bad_kind(y, ev, "a mapping (moveit_msgs/CollisionObject)");
    int rc = tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
    o->subframe_names = sub_names.arr; /* the object owns them from here, whatever happened */
    o->n_subframes = sub_names.n;
    o->subframe_poses = sub_poses.arr;
    if (rc == TDM_OK) rc = object_finish(y, ev, f, &b);
    if (rc == TDM_OK) rc = subframes_finish(y, &f[10], &f[11], sub_poses.n, o);
    *id_field = f[0];
    free(b.prim_poses.arr);
    free(b.mesh_poses.arr);
    free(b.plane_poses.arr);
    return rc;
}

static int item_object(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    scene_build *sb = dst;
    tdm_planning_scene *s = sb->s;
    int rc = TDM_OK;
    tdm_ps_object *a =
        tdm__yaml_grow(y, &ev->start_mark, s->objects, i, sizeof *a, TDM_PS_MAX_OBJECTS, "collision objects", &rc);
    if (!a) return rc;
    s->objects = a;
    s->n_objects = i + 1;
    tdm_ps_object *o = &a[i];
    tdm__yaml_field id;
    if ((rc = read_object(y, ev, o, &sb->n_shapes, &id))) return rc;
    int64_t j = seen_add(&sb->world_ids, s->objects, sizeof *s->objects, offsetof(tdm_ps_object, id), i);
    if (j == -2) return tdm__yaml_fail(y, &ev->start_mark, TDM_ENOMEM, "out of memory");
    if (j >= 0)
        return tdm__yaml_fail_field(y, &id, TDM_EFORMAT, "duplicate id '%s' (also world.collision_objects[%u])", o->id,
                                    (uint32_t)j);
    return TDM_OK;
}
static int f_objects(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_object, dst);
}

/* ---- attached objects (moveit_msgs/AttachedCollisionObject) -------------------------- */

typedef struct attached_build {
    scene_build *sb;
    tdm_ps_attached *at;
    tdm__yaml_field id; /* the object's id field, for the uniqueness check */
} attached_build;

static int f_attached_object(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    attached_build *ab = dst;
    return read_object(y, ev, &ab->at->object, &ab->sb->n_shapes, &ab->id);
}

static int item_attached(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    scene_build *sb = dst;
    tdm_planning_scene *s = sb->s;
    int rc = TDM_OK;
    tdm_ps_attached *a = tdm__yaml_grow(y, &ev->start_mark, s->attached, i, sizeof *a, TDM_PS_MAX_OBJECTS,
                                        "attached collision objects", &rc);
    if (!a) return rc;
    s->attached = a;
    s->n_attached = i + 1;
    tdm_ps_attached *at = &a[i];
    attached_build ab = {sb, at, {0}};
    tdm__yaml_list touch = {TDM__YAML_STRINGS, NULL, 0, TDM_PS_MAX_JOINTS, "touch links"};
    tdm__yaml_field f[] = {TDM__YAML_FIELD("link_name", tdm__yaml_read_string, &at->link_name),
                           TDM__YAML_FIELD("object", f_attached_object, &ab),
                           TDM__YAML_FIELD("touch_links", tdm__yaml_read_list, &touch)};
    if (ev->type != YAML_MAPPING_START_EVENT)
        return tdm__yaml_bad_kind(y, ev, "a mapping (moveit_msgs/AttachedCollisionObject)");
    rc = tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
    at->touch_links = touch.arr; /* the scene owns them from here, whatever happened */
    at->n_touch = touch.n;
    if (rc) return rc;
    if (!f[0].seen || !at->link_name[0])
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no link_name (the link the object is attached to)");
    if (!f[1].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no object");
    if (at->object.n_planes) {
        size_t m = tdm__yaml_push(y, "object", 0);
        rc = tdm__yaml_fail(y, &f[1].mark, TDM_EFORMAT, "an attached object with planes is not supported (an infinite "
                                                        "plane moving with a link)");
        tdm__yaml_pop(y, m);
        return rc;
    }
    int64_t j = seen_add(&sb->attached_ids, s->attached, sizeof *s->attached, offsetof(tdm_ps_attached, object.id), i);
    if (j == -2) return tdm__yaml_fail(y, &ev->start_mark, TDM_ENOMEM, "out of memory");
    if (j >= 0) {
        size_t m = tdm__yaml_push(y, "object", 0);
        rc = tdm__yaml_fail_field(y, &ab.id, TDM_EFORMAT,
                                  "duplicate id '%s' (also robot_state.attached_collision_objects[%u])", at->object.id,
                                  (uint32_t)j);
        tdm__yaml_pop(y, m);
        return rc;
    }
    return TDM_OK;
}
static int f_attached(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_attached, dst);
}

/* A scene's robot_state: as f_robot_state, and its attached objects. */
static int f_scene_robot_state(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    scene_build *sb = dst;
    tdm__yaml_field f[] = {TDM__YAML_FIELD("joint_state", f_joint_state, &sb->s->robot_state),
                           TDM__YAML_FIELD("multi_dof_joint_state", f_multi_dof, &sb->s->robot_state),
                           TDM__YAML_FIELD("attached_collision_objects", f_attached, sb)};
    return tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
}

static int f_octomap_data(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    (void)dst;
    tdm__yaml_field f[] = {TDM__YAML_FIELD("data", tdm__yaml_read_empty, "octomaps")};
    return tdm__yaml_read_map(y, ev, f, 1);
}
static int f_octomap(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm__yaml_field f[] = {TDM__YAML_FIELD("octomap", f_octomap_data, dst)};
    return tdm__yaml_read_map(y, ev, f, 1);
}

static int f_world(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm__yaml_field f[] = {TDM__YAML_FIELD("collision_objects", f_objects, dst),
                           TDM__YAML_FIELD("octomap", f_octomap, NULL)};
    return tdm__yaml_read_map(y, ev, f, 2);
}

/* geometry_msgs/TransformStamped: child_frame_id, transform {translation, rotation}. */
typedef struct frames_build { tdm_planning_scene *s; seen_names seen; } frames_build;
static int item_fixed_frame(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    frames_build *fb = dst;
    tdm_planning_scene *s = fb->s;
    int rc = TDM_OK;
    char **names = tdm__yaml_grow(y, &ev->start_mark, s->frame_names, i, sizeof *names, TDM_PS_MAX_OBJECTS,
                                  "fixed frame transforms", &rc);
    if (!names) return rc;
    s->frame_names = names;
    tdm_xform *x = tdm__yaml_grow(y, &ev->start_mark, s->frames, i, sizeof *x, TDM_PS_MAX_OBJECTS,
                                  "fixed frame transforms", &rc);
    if (!x) return rc;
    s->frames = x;
    s->n_frames = i + 1;
    x[i] = tdm_xform_identity();
    tdm__yaml_field f[] = {TDM__YAML_FIELD("child_frame_id", tdm__yaml_read_string, &names[i]),
                           TDM__YAML_FIELD("transform", f_transform, &x[i])};
    if (ev->type != YAML_MAPPING_START_EVENT)
        return tdm__yaml_bad_kind(y, ev, "a mapping (geometry_msgs/TransformStamped)");
    if ((rc = tdm__yaml_read_map(y, ev, f, 2))) return rc;
    if (!names[i] || !names[i][0]) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no child_frame_id");
    /* no transform: the identity (x[i] as set above) */
    int64_t j = seen_add(&fb->seen, names, sizeof *names, 0, i);
    if (j == -2) return tdm__yaml_fail(y, &ev->start_mark, TDM_ENOMEM, "out of memory");
    if (j >= 0)
        return tdm__yaml_fail_field(y, &f[0], TDM_EFORMAT, "frame '%s' is given twice (also fixed_frame_transforms[%u])",
                                    names[i], (uint32_t)j);
    return TDM_OK;
}
static int f_fixed_frames(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm_planning_scene *s = dst;
    frames_build fb = {s, {NULL, 0, 0}};
    int rc = tdm__yaml_read_seq(y, ev, item_fixed_frame, &fb);
    free(fb.seen.idx);
    if (rc == TDM_OK && !(s->frames_by_name = tdm_ps_name_order(s->frame_names, s->n_frames)))
        rc = tdm__yaml_fail(y, &ev->start_mark, TDM_ENOMEM, "out of memory");
    return rc;
}

/* moveit_msgs/LinkPadding and LinkScale: MoveIt grows (or scales) each link so named
 * before checking it; Tandem checks the links as they are, so only the values that
 * change nothing are accepted (the zero paddings and unit scales MoveIt writes for
 * every link when it dumps a scene), anything else refused rather than dropped. */
typedef struct link_change { const char *field, *what; double neutral; } link_change;
static int item_link_change(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    (void)i;
    const link_change *lc = dst;
    char *name = NULL;
    double v = lc->neutral;
    tdm__yaml_field f[] = {TDM__YAML_FIELD("link_name", tdm__yaml_read_string, &name),
                           TDM__YAML_FIELD(lc->field, tdm__yaml_read_double, &v)};
    if (ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping");
    int rc = tdm__yaml_read_map(y, ev, f, 2);
    if (rc == TDM_OK && v != lc->neutral)
        rc = tdm__yaml_fail_field(y, &f[1], TDM_EFORMAT,
                                  "%s %g for link '%s' is not supported: the links are checked as they are "
                                  "(only %g is accepted)",
                                  lc->what, v, name ? name : "", lc->neutral);
    free(name);
    return rc;
}
static int f_link_padding(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    (void)dst;
    link_change lc = {"padding", "a padding of", 0};
    return tdm__yaml_read_seq(y, ev, item_link_change, &lc);
}
static int f_link_scale(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    (void)dst;
    link_change lc = {"scale", "a scale of", 1};
    return tdm__yaml_read_seq(y, ev, item_link_change, &lc);
}

static int scene_root(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm_planning_scene *s = dst;
    scene_build sb = {s, 0, {NULL, 0, 0}, {NULL, 0, 0}};
    if (ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping (moveit_msgs/PlanningScene)");
    tdm__yaml_field f[] = {TDM__YAML_FIELD("name", tdm__yaml_read_string, &s->name),
                           TDM__YAML_FIELD("robot_model_name", tdm__yaml_read_string, &s->robot_model_name),
                           TDM__YAML_FIELD("world", f_world, &sb),
                           TDM__YAML_FIELD("allowed_collision_matrix", f_acm, &s->acm),
                           TDM__YAML_FIELD("robot_state", f_scene_robot_state, &sb),
                           TDM__YAML_FIELD("fixed_frame_transforms", f_fixed_frames, s),
                           TDM__YAML_FIELD("link_padding", f_link_padding, NULL),
                           TDM__YAML_FIELD("link_scale", f_link_scale, NULL)};
    int rc = tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
    free(sb.world_ids.idx);
    free(sb.attached_ids.idx);
    return rc;
}

/* ---- requests ------------------------------------------------------------------ */

static int item_joint_constraint(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_motion_request *r = dst;
    int rc = TDM_OK;
    char **names = tdm__yaml_grow(y, &ev->start_mark, r->goal_names, i, sizeof *names, TDM_PS_MAX_JOINTS,
                                  "joint constraints", &rc);
    if (!names) return rc;
    r->goal_names = names;
    double *pos = tdm__yaml_grow(y, &ev->start_mark, r->goal_positions, i, sizeof *pos, TDM_PS_MAX_JOINTS,
                                 "joint constraints", &rc);
    if (!pos) return rc;
    r->goal_positions = pos;
    r->n_goal = i + 1;
    tdm__yaml_field f[] = {TDM__YAML_FIELD("joint_name", tdm__yaml_read_string, &names[i]),
                           TDM__YAML_FIELD("position", tdm__yaml_read_double, &pos[i])};
    if (ev->type != YAML_MAPPING_START_EVENT)
        return tdm__yaml_bad_kind(y, ev, "a mapping (moveit_msgs/JointConstraint)");
    if ((rc = tdm__yaml_read_map(y, ev, f, 2))) return rc;
    for (int k = 0; k < 2; k++)
        if (!f[k].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no %s", f[k].key);
    return TDM_OK;
}
static int f_joint_constraints(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_joint_constraint, dst);
}

static int item_goal(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    tdm_motion_request *r = dst;
    if (i > 0) return tdm__yaml_skip(y, ev); /* only the first set is read (the header says why) */
    static const char cartesian[] = "Cartesian goal constraints (only joint constraints)";
    tdm__yaml_field f[] = {TDM__YAML_FIELD("joint_constraints", f_joint_constraints, r),
                           TDM__YAML_FIELD("position_constraints", tdm__yaml_read_empty, cartesian),
                           TDM__YAML_FIELD("orientation_constraints", tdm__yaml_read_empty, cartesian),
                           TDM__YAML_FIELD("visibility_constraints", tdm__yaml_read_empty, cartesian)};
    if (ev->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a mapping (moveit_msgs/Constraints)");
    int rc = tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
    if (rc) return rc;
    if (r->n_goal == 0)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT,
                              "no joint_constraints (Cartesian goals are not supported)");
    return tdm__yaml_check_distinct(y, &f[0], r->goal_names, r->n_goal);
}
static int f_goals(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_goal, dst);
}

static int request_root(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    tdm_motion_request *r = dst;
    if (ev->type != YAML_MAPPING_START_EVENT)
        return tdm__yaml_bad_kind(y, ev, "a mapping (moveit_msgs/MotionPlanRequest)");
    tdm__yaml_field f[] = {TDM__YAML_FIELD("group_name", tdm__yaml_read_string, &r->group_name),
                           TDM__YAML_FIELD("start_state", f_robot_state, &r->start),
                           TDM__YAML_FIELD("goal_constraints", f_goals, r)};
    int rc = tdm__yaml_read_map(y, ev, f, sizeof f / sizeof *f);
    if (rc) return rc;
    if (!f[2].seen) return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "no goal_constraints");
    if (r->n_goal == 0) return tdm__yaml_fail_field(y, &f[2], TDM_EFORMAT, "no goal: the list is empty");
    return TDM_OK;
}

/* ---- loading and freeing ------------------------------------------------------ */

/* Absent strings become "" (owned, like the rest). */
static int fill_empty(char **s) { return *s || (*s = strdup("")) ? TDM_OK : TDM_ENOMEM; }

static int scene_load(const char *path, const char *yaml, size_t len, const char *name, tdm_planning_scene **out,
                      char *err, size_t errlen)
{
    *out = NULL;
    tdm_planning_scene *s = calloc(1, sizeof *s);
    int rc = s ? tdm__yaml_parse(path, yaml, len, name, &limits, scene_root, s, err, errlen) : TDM_ENOMEM;
    if (rc == TDM_OK && (fill_empty(&s->name) || fill_empty(&s->robot_model_name))) rc = TDM_ENOMEM;
    if (rc == TDM_ENOMEM && err && errlen > 0 && !err[0]) snprintf(err, errlen, "out of memory");
    if (rc) goto fail;
    *out = s;
    return TDM_OK;
fail:
    tdm_planning_scene_free(s);
    return rc;
}

int tdm_planning_scene_read(const char *path, tdm_planning_scene **out, char *err, size_t errlen)
{
    return scene_load(path, NULL, 0, NULL, out, err, errlen);
}

int tdm_planning_scene_parse(const char *yaml, size_t len, const char *name, tdm_planning_scene **out, char *err,
                             size_t errlen)
{
    return scene_load(NULL, yaml, len, name, out, err, errlen);
}

static void free_names(char **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void robot_state_free(tdm_ps_robot_state *st)
{
    free_names(st->joint_names, st->n_joints);
    free(st->positions);
    free_names(st->multi_dof_names, st->n_multi_dof);
    free(st->multi_dof);
}

static void object_free(tdm_ps_object *o)
{
    free(o->id);
    free(o->frame_id);
    free(o->primitives);
    for (uint32_t k = 0; k < o->n_meshes; k++) {
        free(o->meshes[k].verts);
        free(o->meshes[k].tris);
    }
    free(o->meshes);
    free(o->planes);
    free_names(o->subframe_names, o->n_subframes);
    free(o->subframe_poses);
    free(o->subframes_by_name);
}

void tdm_planning_scene_free(tdm_planning_scene *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->n_objects; i++) object_free(&s->objects[i]);
    free(s->objects);
    for (uint32_t i = 0; i < s->n_attached; i++) {
        free(s->attached[i].link_name);
        object_free(&s->attached[i].object);
        free_names(s->attached[i].touch_links, s->attached[i].n_touch);
    }
    free(s->attached);
    free_names(s->frame_names, s->n_frames);
    free(s->frames);
    free(s->frames_by_name);
    free_names(s->acm.names, s->acm.n);
    free(s->acm.allowed);
    free_names(s->acm.default_names, s->acm.n_defaults);
    free(s->acm.default_allowed);
    free(s->acm.by_name);
    free(s->acm.defaults_by_name);
    robot_state_free(&s->robot_state);
    free(s->name);
    free(s->robot_model_name);
    free(s);
}

static int request_load(const char *path, const char *yaml, size_t len, const char *name, tdm_motion_request **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    tdm_motion_request *r = calloc(1, sizeof *r);
    int rc = r ? tdm__yaml_parse(path, yaml, len, name, &limits, request_root, r, err, errlen) : TDM_ENOMEM;
    if (rc == TDM_OK && fill_empty(&r->group_name)) rc = TDM_ENOMEM;
    if (rc == TDM_ENOMEM && err && errlen > 0 && !err[0]) snprintf(err, errlen, "out of memory");
    if (rc) goto fail;
    *out = r;
    return TDM_OK;
fail:
    tdm_motion_request_free(r);
    return rc;
}

int tdm_motion_request_read(const char *path, tdm_motion_request **out, char *err, size_t errlen)
{
    return request_load(path, NULL, 0, NULL, out, err, errlen);
}

int tdm_motion_request_parse(const char *yaml, size_t len, const char *name, tdm_motion_request **out, char *err,
                             size_t errlen)
{
    return request_load(NULL, yaml, len, name, out, err, errlen);
}

void tdm_motion_request_free(tdm_motion_request *r)
{
    if (!r) return;
    free(r->group_name);
    robot_state_free(&r->start);
    free_names(r->goal_names, r->n_goal);
    free(r->goal_positions);
    free(r);
}

/* ---- look-ups ------------------------------------------------------------------ */

static int64_t index_of(char *const *names, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

int32_t tdm_ps_name_find(char *const *names, const uint32_t *order, uint32_t n, const char *name)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(names[order[mid]], name);
        if (c == 0) return (int32_t)order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

tdm_ps_acm_key tdm_ps_acm_key_of(const tdm_ps_acm *acm, const char *name)
{
    tdm_ps_acm_key k = {tdm_ps_name_find(acm->names, acm->by_name, acm->n, name),
                        tdm_ps_name_find(acm->default_names, acm->defaults_by_name, acm->n_defaults, name)};
    return k;
}

int tdm_ps_acm_allowed_keys(const tdm_ps_acm *acm, tdm_ps_acm_key a, tdm_ps_acm_key b)
{
    if (a.entry >= 0 && b.entry >= 0 && a.entry != b.entry)
        return acm->allowed[(size_t)a.entry * acm->n + (size_t)b.entry];
    if (a.def >= 0 && b.def >= 0) return acm->default_allowed[a.def] && acm->default_allowed[b.def];
    if (a.def >= 0) return acm->default_allowed[a.def];
    if (b.def >= 0) return acm->default_allowed[b.def];
    return 0;
}

int tdm_ps_acm_allowed(const tdm_ps_acm *acm, const char *a, const char *b)
{
    return tdm_ps_acm_allowed_keys(acm, tdm_ps_acm_key_of(acm, a), tdm_ps_acm_key_of(acm, b));
}

int tdm_ps_fixed_frame(const tdm_planning_scene *ps, const char *name, tdm_xform *out)
{
    int32_t i = tdm_ps_name_find(ps->frame_names, ps->frames_by_name, ps->n_frames, name);
    if (i < 0) return 0;
    *out = ps->frames[i];
    return 1;
}

int tdm_ps_robot_state_position(const tdm_ps_robot_state *st, const char *joint, double *value)
{
    int64_t i = index_of(st->joint_names, st->n_joints, joint);
    if (i < 0) return 0;
    *value = st->positions[i];
    return 1;
}

tdm_xform tdm_ps_robot_state_root(const tdm_ps_robot_state *st, const char *joint)
{
    if (!joint) return st->n_multi_dof == 1 ? st->multi_dof[0] : tdm_xform_identity();
    int64_t i = index_of(st->multi_dof_names, st->n_multi_dof, joint);
    return i < 0 ? tdm_xform_identity() : st->multi_dof[i];
}
