/* The codec: request frames out, reply frames in, no I/O (hiredis' read.c + the encoders).
 *
 * nanopb is built without PB_ENABLE_MALLOC, so every repeated, string and bytes field is a
 * pb_callback_t. Requests stream their arrays (vertices, triangles, poses) straight from the
 * caller's memory through encode callbacks; replies are decoded through callbacks into
 * scratch arrays owned by the reader, or straight into the caller's result arrays.
 *
 * The Request and Reply envelopes are handled by hand rather than by nanopb: a oneof whose
 * members contain callbacks cannot have them installed before the member is known (that
 * needs the submsg_callback option, which the shared .proto does not set). The envelope is
 * two fields, so the id is read first and the body is then decoded with the callbacks its
 * type needs. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pb_decode.h>
#include <pb_encode.h>

#include "../proto/varint.h"
#include "internal.h"
#include "tandem.pb.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TDM__LE 1
#else
#define TDM__LE 0
#endif

/* Reader buffer: start size, and the size a drained buffer shrinks back to. */
#define READER_INIT (64u << 10)
#define READER_KEEP (1u << 20)

/* ---- encoding ---------------------------------------------------------------------------- */

typedef struct encst {
    const tdm__req *rq;
    const pb_msgdesc_t *fields;
    union {
        tandem_v1_Hello hello;
        tandem_v1_MeshPut mesh_put;
        tandem_v1_MeshDelete mesh_delete;
        tandem_v1_ScenePut scene_put;
        tandem_v1_SceneDelete scene_delete;
        tandem_v1_Query query;
        tandem_v1_MeshList empty;
        tandem_v1_RobotPut robot_put;
        tandem_v1_RobotScenePut robot_scene_put;
        tandem_v1_MotionCheck motion_check;
        tandem_v1_RingOpen ring_open;
    } m;
    uint64_t tris_payload; /* varint bytes of the triangle array, computed once */
    bool tris_known;
} encst;

static bool enc_string(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const char *str = *arg;
    if (!str || !*str) return true; /* proto3: an empty string is not sent */
    return pb_encode_tag_for_field(s, f) && pb_encode_string(s, (const pb_byte_t *)str, strlen(str));
}

static bool enc_id(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    return pb_encode_tag_for_field(s, f) && pb_encode_string(s, (const pb_byte_t *)*arg, TDM_ID_BYTES);
}

/* Packed fixed-width arrays: one tag, one length, then the little-endian values. On a
 * little-endian host that is one pb_write of the caller's array, which a sizing stream only
 * counts, so sizing a 64 MiB mesh costs nothing. */
static bool enc_fixed_array(pb_ostream_t *s, const pb_field_t *f, const void *data, size_t n, size_t width)
{
    if (n == 0) return true;
    if (!pb_encode_tag(s, PB_WT_STRING, f->tag) || !pb_encode_varint(s, (uint64_t)n * width)) return false;
#if TDM__LE
    return pb_write(s, (const pb_byte_t *)data, n * width);
#else
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = (const uint8_t *)data + i * width;
        if (!(width == 4 ? pb_encode_fixed32(s, p) : pb_encode_fixed64(s, p))) return false;
    }
    return true;
#endif
}

static bool enc_vertices(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    return enc_fixed_array(s, f, st->rq->u.mesh_put.verts, (size_t)st->rq->u.mesh_put.n_verts * 3, 4);
}

static bool enc_triangles(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    encst *st = *arg;
    const uint32_t *t = st->rq->u.mesh_put.tris;
    size_t n = (size_t)st->rq->u.mesh_put.n_tris * 3;
    if (n == 0) return true;
    if (!st->tris_known) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < n; i++) bytes += tdm_varint_size(t[i]);
        st->tris_payload = bytes;
        st->tris_known = true;
    }
    if (!pb_encode_tag(s, PB_WT_STRING, f->tag) || !pb_encode_varint(s, st->tris_payload)) return false;
    if (!s->callback) return pb_write(s, NULL, st->tris_payload); /* sizing pass */
    for (size_t i = 0; i < n; i++)
        if (!pb_encode_varint(s, t[i])) return false;
    return true;
}

static bool enc_poses(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    return enc_fixed_array(s, f, st->rq->u.query.poses, st->rq->u.query.n_doubles, 8);
}

static bool enc_motions(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    return enc_fixed_array(s, f, st->rq->u.motion_check.motions, st->rq->u.motion_check.n_doubles, 8);
}

static bool enc_points(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    const uint32_t *p = st->rq->u.motion_check.points;
    size_t n = st->rq->u.motion_check.n_motions, len = 0;
    if (!p) return true;
    for (size_t i = 0; i < n; i++) len += tdm_varint_size(p[i]);
    if (!pb_encode_tag(s, PB_WT_STRING, f->tag) || !pb_encode_varint(s, len)) return false;
    for (size_t i = 0; i < n; i++)
        if (!pb_encode_varint(s, p[i])) return false;
    return true;
}

static bool enc_robot_meshes(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    for (size_t i = 0; i < st->rq->u.robot_put.n_meshes; i++) {
        const tdm_robot_mesh_ref *r = &st->rq->u.robot_put.meshes[i];
        tandem_v1_RobotMesh m = tandem_v1_RobotMesh_init_zero;
        m.filename.funcs.encode = enc_string;
        m.filename.arg = (void *)(uintptr_t)r->filename;
        m.mesh_id.funcs.encode = enc_id;
        m.mesh_id.arg = (void *)(uintptr_t)r->mesh_id;
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, tandem_v1_RobotMesh_fields, &m)) return false;
    }
    return true;
}

static bool enc_objects(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    for (size_t i = 0; i < st->rq->u.scene_put.n_objects; i++) {
        const tdm_scene_object *o = &st->rq->u.scene_put.objects[i];
        tandem_v1_SceneObject m = tandem_v1_SceneObject_init_zero;
        m.object_id = o->object_id;
        m.mesh_id.funcs.encode = enc_id;
        m.mesh_id.arg = (void *)(uintptr_t)o->mesh_id;
        m.movable = o->movable != 0;
        if (!o->movable && o->has_pose) {
            m.has_pose = true;
            m.pose = (tandem_v1_Pose){o->pose[0], o->pose[1], o->pose[2], o->pose[3],
                                      o->pose[4], o->pose[5], o->pose[6]};
        }
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, tandem_v1_SceneObject_fields, &m))
            return false;
    }
    return true;
}

static bool enc_allowed(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const encst *st = *arg;
    for (size_t i = 0; i < st->rq->u.scene_put.n_allowed; i++) {
        tandem_v1_ObjectPair m = {st->rq->u.scene_put.allowed[i].a, st->rq->u.scene_put.allowed[i].b};
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, tandem_v1_ObjectPair_fields, &m))
            return false;
    }
    return true;
}

#define SET_CB(cb, fn, a)                                                                                    \
    do {                                                                                                     \
        (cb).funcs.encode = (fn);                                                                            \
        (cb).arg = (void *)(uintptr_t)(a);                                                                   \
    } while (0)

static int enc_prepare(const tdm__req *rq, encst *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    st->rq = rq;
    switch (rq->type) {
    case TDM_REPLY_HELLO:
        st->fields = tandem_v1_Hello_fields;
        st->m.hello.protocol_version = TDM_PROTOCOL_VERSION;
        SET_CB(st->m.hello.auth_token, enc_string, rq->u.hello.auth_token);
        SET_CB(st->m.hello.client_name, enc_string, rq->u.hello.client_name);
        return 0;
    case TDM_REPLY_MESH_PUT:
        if ((rq->u.mesh_put.n_verts && !rq->u.mesh_put.verts) || (rq->u.mesh_put.n_tris && !rq->u.mesh_put.tris))
            break;
        st->fields = tandem_v1_MeshPut_fields;
        SET_CB(st->m.mesh_put.name, enc_string, rq->u.mesh_put.name);
        SET_CB(st->m.mesh_put.vertices, enc_vertices, st);
        SET_CB(st->m.mesh_put.triangles, enc_triangles, st);
        return 0;
    case TDM_REPLY_ROBOT_PUT:
        if (!rq->u.robot_put.urdf || (rq->u.robot_put.n_meshes && !rq->u.robot_put.meshes)) break;
        for (size_t i = 0; i < rq->u.robot_put.n_meshes; i++)
            if (!rq->u.robot_put.meshes[i].filename) goto bad;
        st->fields = tandem_v1_RobotPut_fields;
        SET_CB(st->m.robot_put.name, enc_string, rq->u.robot_put.name);
        SET_CB(st->m.robot_put.urdf, enc_string, rq->u.robot_put.urdf);
        SET_CB(st->m.robot_put.srdf, enc_string, rq->u.robot_put.srdf);
        SET_CB(st->m.robot_put.meshes, enc_robot_meshes, st);
        return 0;
    case TDM_REPLY_ROBOT_SCENE_PUT:
        if (!rq->u.robot_scene_put.robot_id || !rq->u.robot_scene_put.world) break;
        st->fields = tandem_v1_RobotScenePut_fields;
        SET_CB(st->m.robot_scene_put.name, enc_string, rq->u.robot_scene_put.name);
        SET_CB(st->m.robot_scene_put.robot_id, enc_id, rq->u.robot_scene_put.robot_id);
        SET_CB(st->m.robot_scene_put.world, enc_string, rq->u.robot_scene_put.world);
        st->m.robot_scene_put.ephemeral = rq->u.robot_scene_put.ephemeral != 0;
        return 0;
    case TDM_REPLY_ROBOT_LIST:
        st->fields = tandem_v1_RobotList_fields;
        return 0;
    case TDM_REPLY_MOTION_CHECK:
        if (!rq->u.motion_check.scene_id || !rq->u.motion_check.motions || !rq->u.motion_check.n_doubles) break;
        st->fields = tandem_v1_MotionCheck_fields;
        SET_CB(st->m.motion_check.scene_id, enc_id, rq->u.motion_check.scene_id);
        st->m.motion_check.resolution = rq->u.motion_check.resolution;
        SET_CB(st->m.motion_check.motions, enc_motions, st);
        SET_CB(st->m.motion_check.points, enc_points, st);
        st->m.motion_check.any_state = (rq->u.motion_check.flags & TDM_MOTION_ANY_STATE) != 0;
        return 0;
    case TDM_REPLY_ROBOT_DELETE:
    case TDM_REPLY_MESH_DELETE:
    case TDM_REPLY_SCENE_DELETE:
        if (!rq->u.id) break;
        if (rq->type == TDM_REPLY_ROBOT_DELETE) {
            st->fields = tandem_v1_RobotDelete_fields; /* one bytes field, as MeshDelete */
            SET_CB(st->m.mesh_delete.mesh_id, enc_id, rq->u.id);
            return 0;
        }
        st->fields = rq->type == TDM_REPLY_MESH_DELETE ? tandem_v1_MeshDelete_fields : tandem_v1_SceneDelete_fields;
        SET_CB(st->m.mesh_delete.mesh_id, enc_id, rq->u.id); /* both messages are one bytes field */
        return 0;
    case TDM_REPLY_SCENE_PUT:
        if ((rq->u.scene_put.n_objects && !rq->u.scene_put.objects) ||
            (rq->u.scene_put.n_allowed && !rq->u.scene_put.allowed))
            break;
        st->fields = tandem_v1_ScenePut_fields;
        SET_CB(st->m.scene_put.name, enc_string, rq->u.scene_put.name);
        SET_CB(st->m.scene_put.objects, enc_objects, st);
        SET_CB(st->m.scene_put.allowed, enc_allowed, st);
        st->m.scene_put.ephemeral = rq->u.scene_put.ephemeral != 0;
        return 0;
    case TDM_REPLY_QUERY:
        if (!rq->u.query.scene_id || !rq->u.query.poses || rq->u.query.n_doubles == 0) break;
        st->fields = tandem_v1_Query_fields;
        SET_CB(st->m.query.scene_id, enc_id, rq->u.query.scene_id);
        st->m.query.mode = rq->u.query.mode == TDM_QUERY_CONTACTS ? tandem_v1_Mode_MODE_CONTACTS
                                                                  : tandem_v1_Mode_MODE_BOOL;
        if (rq->u.query.is_configs) SET_CB(st->m.query.configs, enc_poses, st);
        else SET_CB(st->m.query.poses, enc_poses, st);
        st->m.query.max_contacts = rq->u.query.max_contacts;
        st->m.query.want_pairs = rq->u.query.want_pairs != 0;
        return 0;
    case TDM_REPLY_MESH_LIST:
        st->fields = tandem_v1_MeshList_fields;
        return 0;
    case TDM_REPLY_SCENE_LIST:
        st->fields = tandem_v1_SceneList_fields;
        return 0;
    case TDM_REPLY_STATS:
        st->fields = tandem_v1_StatsRequest_fields;
        return 0;
    case TDM_REPLY_RING_OPEN:
        st->fields = tandem_v1_RingOpen_fields;
        st->m.ring_open.bytes = rq->u.ring_bytes;
        return 0;
    default:
        break;
    }
bad:
    tdm__fmt(err, errlen, "invalid request arguments (a NULL array, or an empty query)");
    return TDM_CLIENT_EINVAL;
}

/* Sizes: body bytes, and the whole frame including the 4-byte prefix. */
static int enc_size(encst *st, uint64_t id, size_t *body, size_t *frame, char *err, size_t errlen)
{
    size_t b;
    if (!pb_get_encoded_size(&b, st->fields, &st->m)) {
        tdm__fmt(err, errlen, "cannot encode the request: %s", "size overflow");
        return TDM_CLIENT_ELIMIT;
    }
    uint64_t l = 1 + tdm_varint_size(id) + tdm_varint_size((uint64_t)st->rq->type << 3 | PB_WT_STRING) + tdm_varint_size(b) + b;
    if (l > UINT32_MAX) {
        tdm__fmt(err, errlen, "the request needs %llu bytes, over the protocol's 4 GiB frame", (unsigned long long)l);
        return TDM_CLIENT_ELIMIT;
    }
    *body = b;
    *frame = (size_t)l + 4;
    return 0;
}

static int enc_write(encst *st, uint64_t id, size_t body, size_t frame, uint8_t *dst, char *err, size_t errlen)
{
    uint32_t l = (uint32_t)(frame - 4);
    uint8_t *p = dst;
    *p++ = (uint8_t)(l >> 24);
    *p++ = (uint8_t)(l >> 16);
    *p++ = (uint8_t)(l >> 8);
    *p++ = (uint8_t)l;
    *p++ = (uint8_t)(1 << 3 | PB_WT_VARINT);
    p = tdm_varint_put(p, id);
    p = tdm_varint_put(p, (uint64_t)st->rq->type << 3 | PB_WT_STRING);
    p = tdm_varint_put(p, body);
    pb_ostream_t os = pb_ostream_from_buffer(p, body);
    if (!pb_encode(&os, st->fields, &st->m) || os.bytes_written != body) {
        tdm__fmt(err, errlen, "cannot encode the request: %s", PB_GET_ERROR(&os));
        return TDM_CLIENT_EINVAL;
    }
    return 0;
}

int tdm__req_query(tdm__req *rq, const uint8_t *scene_id, tdm_query_mode mode, const double *poses,
                   uint32_t n_movable, size_t n_queries, uint32_t max_contacts, int want_pairs)
{
    memset(rq, 0, sizeof *rq);
    if (!scene_id || !poses || n_movable == 0 || n_queries == 0) return TDM_CLIENT_EINVAL;
    if (mode != TDM_QUERY_BOOL && mode != TDM_QUERY_CONTACTS) return TDM_CLIENT_EINVAL;
    if (n_queries > SIZE_MAX / 8 / 7 / n_movable) return TDM_CLIENT_EINVAL;
    rq->type = TDM_REPLY_QUERY;
    rq->u.query.scene_id = scene_id;
    rq->u.query.mode = mode;
    rq->u.query.poses = poses;
    rq->u.query.n_doubles = n_queries * n_movable * 7;
    rq->u.query.max_contacts = max_contacts;
    rq->u.query.want_pairs = want_pairs;
    return 0;
}

int tdm__encode(const tdm__req *rq, uint64_t id, tdm__buf *b, uint32_t max_frame, char *err, size_t errlen)
{
    encst st;
    size_t body, frame;
    int rc = enc_prepare(rq, &st, err, errlen);
    if (rc == 0) rc = enc_size(&st, id, &body, &frame, err, errlen);
    if (rc) return rc;
    if (max_frame && frame - 4 > max_frame) {
        tdm__fmt(err, errlen, "the request is %zu bytes, over the server's max_frame_bytes of %u", frame - 4,
                 max_frame);
        return TDM_CLIENT_ELIMIT;
    }
    if (tdm__buf_reserve(b, frame)) {
        tdm__fmt(err, errlen, "out of memory for a %zu-byte request", frame);
        return TDM_CLIENT_ENOMEM;
    }
    rc = enc_write(&st, id, body, frame, b->data + b->len, err, errlen);
    if (rc == 0) b->len += frame;
    return rc;
}

static int encode_into(const tdm__req *rq, void *dst, size_t cap, size_t *len, uint64_t id)
{
    encst st;
    size_t body, frame;
    char err[1];
    if (!len) return TDM_CLIENT_EINVAL;
    *len = 0;
    int rc = enc_prepare(rq, &st, err, 0);
    if (rc == 0) rc = enc_size(&st, id, &body, &frame, err, 0);
    if (rc) return rc;
    *len = frame;
    if (!dst || cap < frame) return TDM_CLIENT_ENOBUFS;
    return enc_write(&st, id, body, frame, dst, err, 0);
}

int tdm_encode_hello(void *dst, size_t cap, size_t *len, uint64_t id, const char *auth_token, const char *client_name)
{
    tdm__req rq = {.type = TDM_REPLY_HELLO, .u.hello = {auth_token, client_name}};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_mesh_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name, const float *verts,
                        uint32_t n_verts, const uint32_t *tris, uint32_t n_tris)
{
    tdm__req rq = {.type = TDM_REPLY_MESH_PUT, .u.mesh_put = {name, verts, n_verts, tris, n_tris}};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_mesh_list(void *dst, size_t cap, size_t *len, uint64_t id)
{
    tdm__req rq = {.type = TDM_REPLY_MESH_LIST};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_mesh_delete(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t mesh_id[TDM_ID_BYTES])
{
    tdm__req rq = {.type = TDM_REPLY_MESH_DELETE, .u.id = mesh_id};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_scene_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name,
                         const tdm_scene_object *objects, size_t n_objects, const tdm_object_pair *allowed,
                         size_t n_allowed)
{
    tdm__req rq = {.type = TDM_REPLY_SCENE_PUT, .u.scene_put = {name, objects, n_objects, allowed, n_allowed, 0}};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_scene_list(void *dst, size_t cap, size_t *len, uint64_t id)
{
    tdm__req rq = {.type = TDM_REPLY_SCENE_LIST};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_scene_delete(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t scene_id[TDM_ID_BYTES])
{
    tdm__req rq = {.type = TDM_REPLY_SCENE_DELETE, .u.id = scene_id};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_query(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t scene_id[TDM_ID_BYTES],
                     tdm_query_mode mode, const double *poses, uint32_t n_movable, size_t n_queries,
                     uint32_t max_contacts, int want_pairs)
{
    tdm__req rq;
    if (len) *len = 0;
    int rc = tdm__req_query(&rq, scene_id, mode, poses, n_movable, n_queries, max_contacts, want_pairs);
    return rc ? rc : encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_robot_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name, const char *urdf,
                         const char *srdf, const tdm_robot_mesh_ref *meshes, size_t n_meshes)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_PUT, .u.robot_put = {name, urdf, srdf, meshes, n_meshes}};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_motion_check(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t scene_id[TDM_ID_BYTES],
                            double resolution, const double *motions, uint32_t n_joints, size_t n_motions)
{
    if (n_joints == 0 || n_motions == 0 || n_motions > SIZE_MAX / 16 / n_joints) return TDM_CLIENT_EINVAL;
    tdm__req rq = {.type = TDM_REPLY_MOTION_CHECK,
                   .u.motion_check = {scene_id, resolution, motions, n_motions * 2 * n_joints, NULL, n_motions, 0}};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_robot_list(void *dst, size_t cap, size_t *len, uint64_t id)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_LIST};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_robot_delete(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t robot_id[TDM_ID_BYTES])
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_DELETE, .u.id = robot_id};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_robot_scene_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name,
                               const uint8_t robot_id[TDM_ID_BYTES], const char *world_yaml)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_SCENE_PUT, .u.robot_scene_put = {name, robot_id, world_yaml, 0}};
    return encode_into(&rq, dst, cap, len, id);
}

int tdm__req_query_configs(tdm__req *rq, const uint8_t *scene_id, tdm_query_mode mode, const double *configs,
                           uint32_t n_joints, size_t n_queries, uint32_t max_contacts, int want_pairs)
{
    memset(rq, 0, sizeof *rq);
    if (!scene_id || !configs || n_joints == 0 || n_queries == 0) return TDM_CLIENT_EINVAL;
    if (mode != TDM_QUERY_BOOL && mode != TDM_QUERY_CONTACTS) return TDM_CLIENT_EINVAL;
    if (n_queries > SIZE_MAX / 8 / n_joints) return TDM_CLIENT_EINVAL;
    rq->type = TDM_REPLY_QUERY;
    rq->u.query.scene_id = scene_id;
    rq->u.query.mode = mode;
    rq->u.query.poses = configs;
    rq->u.query.n_doubles = n_queries * n_joints;
    rq->u.query.max_contacts = max_contacts;
    rq->u.query.want_pairs = want_pairs;
    rq->u.query.is_configs = 1;
    return 0;
}

int tdm_encode_query_configs(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t scene_id[TDM_ID_BYTES],
                             tdm_query_mode mode, const double *configs, uint32_t n_joints, size_t n_queries,
                             uint32_t max_contacts, int want_pairs)
{
    tdm__req rq;
    if (tdm__req_query_configs(&rq, scene_id, mode, configs, n_joints, n_queries, max_contacts, want_pairs))
        return TDM_CLIENT_EINVAL;
    return encode_into(&rq, dst, cap, len, id);
}

int tdm_encode_stats(void *dst, size_t cap, size_t *len, uint64_t id)
{
    tdm__req rq = {.type = TDM_REPLY_STATS};
    return encode_into(&rq, dst, cap, len, id);
}

/* ---- the reader: framing -------------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int reader_fail(tdm_reader *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int reader_fail(tdm_reader *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tdm__vfmt(r->errstr, sizeof r->errstr, fmt, ap);
    va_end(ap);
    r->err = code;
    return code;
}

int tdm__reader_init(tdm_reader *r, uint32_t max_frame)
{
    memset(r, 0, sizeof *r);
    r->max_frame = max_frame ? max_frame : TDM_DEFAULT_MAX_REPLY_BYTES;
    r->buf = malloc(READER_INIT);
    r->chars = malloc(256);
    if (!r->buf || !r->chars) {
        free(r->buf);
        free(r->chars);
        return TDM_CLIENT_ENOMEM;
    }
    r->cap = READER_INIT;
    r->chars_cap = 256;
    r->chars[0] = 0;
    return 0;
}

void tdm__reader_deinit(tdm_reader *r)
{
    free(r->buf);
    free(r->results);
    free(r->pairs);
    free(r->meshes);
    free(r->scenes);
    free(r->u32s);
    free(r->joints);
    free(r->robots);
    free(r->objects);
    free(r->motions);
    free(r->doubles);
    free(r->chars);
    memset(r, 0, sizeof *r);
}

int tdm__reader_space(tdm_reader *r, size_t min, uint8_t **p, size_t *avail)
{
    if (r->start == r->end) {
        r->start = r->end = 0;
        if (r->cap > READER_KEEP) { /* a large reply has been consumed: give its memory back */
            uint8_t *nb = malloc(READER_INIT);
            if (nb) {
                free(r->buf);
                r->buf = nb;
                r->cap = READER_INIT;
            }
        }
    }
    size_t have = r->end - r->start, want = min;
    if (have >= 4) { /* a frame is under way: make room for all of it at once */
        uint64_t total = 4 + (uint64_t)be32(r->buf + r->start);
        if (total <= 4 + (uint64_t)r->max_frame && total > have && total - have > want) want = (size_t)(total - have);
    }
    if (r->cap - r->end < want) {
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, have);
            r->start = 0;
            r->end = have;
        }
        if (r->cap - r->end < want) {
            size_t ncap = r->cap * 2 > r->end + want ? r->cap * 2 : r->end + want;
            uint8_t *nb = realloc(r->buf, ncap);
            if (!nb) return reader_fail(r, TDM_CLIENT_ENOMEM, "out of memory for a %zu-byte reply", r->end + want);
            r->buf = nb;
            r->cap = ncap;
        }
    }
    *p = r->buf + r->end;
    *avail = r->cap - r->end;
    return 0;
}

void tdm__reader_commit(tdm_reader *r, size_t n)
{
    r->end += n;
}

int tdm__reader_next(tdm_reader *r, const uint8_t **frame, size_t *len)
{
    if (r->err) return r->err;
    size_t have = r->end - r->start;
    if (have < 4) return 0;
    uint32_t l = be32(r->buf + r->start);
    if (r->frames == 0 && (l == 0 || l > r->max_frame)) {
        /* the very first bytes make no frame: another protocol answered (HTTP, SSH, ...) */
        const uint8_t *b = r->buf + r->start;
        if ((b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03) /* a TLS alert or handshake record */
            return reader_fail(r, TDM_CLIENT_EPROTO,
                               "the server speaks TLS there: connect to tls://HOST:PORT (with its CA in "
                               "$TANDEM_TLS_CA or the connect options' tls_ca_file)");
        char shown[4 * 16 + 1];
        size_t k = 0, n = have < 16 ? have : 16;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = r->buf[r->start + i];
            if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"') shown[k++] = (char)ch;
            else k += (size_t)snprintf(shown + k, sizeof shown - k, "\\x%02x", ch);
        }
        shown[k] = 0;
        return reader_fail(r, TDM_CLIENT_EPROTO, "not a Tandem server: its first bytes were \"%s\"", shown);
    }
    if (l == 0) return reader_fail(r, TDM_CLIENT_EPROTO, "the server sent a frame of length 0");
    if (l > r->max_frame)
        return reader_fail(r, TDM_CLIENT_EPROTO, "the server sent a %u-byte frame, over this client's limit of %u", l,
                           r->max_frame);
    if (have - 4 < l) return 0;
    *frame = r->buf + r->start + 4;
    *len = l;
    r->start += 4 + (size_t)l;
    r->frames++;
    return 1;
}

static bool is_body_tag(uint32_t tag)
{
    return tag == TDM_REPLY_ERROR || (tag >= TDM_REPLY_HELLO && tag <= TDM_REPLY_RING_OPEN);
}

int tdm__frame_parse(tdm_reader *r, const uint8_t *buf, size_t len, tdm__frame *f)
{
    pb_istream_t s = pb_istream_from_buffer(buf, len);
    memset(f, 0, sizeof *f);
    while (s.bytes_left) {
        uint32_t tag;
        pb_wire_type_t wt;
        bool eof;
        if (!pb_decode_tag(&s, &wt, &tag, &eof) || tag == 0) goto bad;
        if (tag == 1 && wt == PB_WT_VARINT) {
            if (!pb_decode_varint(&s, &f->id)) goto bad;
        } else if (is_body_tag(tag) && wt == PB_WT_STRING) {
            uint32_t n;
            if (!pb_decode_varint32(&s, &n) || n > s.bytes_left) goto bad;
            f->body = buf + (len - s.bytes_left);
            f->body_len = n;
            f->type = (int)tag; /* a later oneof member replaces an earlier one, as in protobuf */
            if (!pb_read(&s, NULL, n)) goto bad;
        } else if (!pb_skip_field(&s, wt)) {
            goto bad;
        }
    }
    if (!f->type) return reader_fail(r, TDM_CLIENT_EPROTO, "the server sent a reply (id %llu) without a body",
                                     (unsigned long long)f->id);
    return 0;
bad:
    return reader_fail(r, TDM_CLIENT_EPROTO, "the server sent an undecodable reply: %s",
                       PB_GET_ERROR(&s) ? PB_GET_ERROR(&s) : "bad field");
}

/* ---- the reader: decoding bodies ---------------------------------------------------------- */

typedef struct dctx {
    tdm_reader *r;
    const tdm__qsink *qs;
    int err;         /* TDM_CLIENT_ENOMEM, or 0 for a malformed message (EPROTO) */
    const char *why; /* what was malformed */
    size_t n_chars, n_u32s, n_meshes, n_scenes, n_joints, n_robots, n_objects, n_motions, n_doubles;
    tdm_query_result *results;
    size_t n_results, results_cap;
    size_t n_pairs, cur_pairs; /* pairs seen in the batch / in the current result */
} dctx;

static bool grow(dctx *d, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem) goto nomem;
        ncap *= 2;
    }
    void *np = realloc(*p, ncap * elem);
    if (!np) goto nomem;
    *p = np;
    *cap = ncap;
    return true;
nomem:
    d->err = TDM_CLIENT_ENOMEM;
    return false;
}

/* Strings go into the reader's char arena; elements keep offsets until the end of the
 * reply (the arena may move while it grows), then become pointers. Offset 0 is "". */
typedef struct strarg {
    dctx *d;
    size_t off;
} strarg;

static bool dec_arena_string(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    strarg *a = *arg;
    dctx *d = a->d;
    size_t n = s->bytes_left;
    if (!grow(d, (void **)&d->r->chars, &d->r->chars_cap, d->n_chars + n + 1, 1)) return false;
    if (!pb_read(s, (pb_byte_t *)d->r->chars + d->n_chars, n)) return false;
    d->r->chars[d->n_chars + n] = 0;
    a->off = d->n_chars;
    d->n_chars += n + 1;
    return true;
}

/* Fixed-size strings (server version, engine detail): truncated, always terminated. */
typedef struct fixstr {
    char *dst;
    size_t cap;
} fixstr;

static bool dec_fixed_string(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    fixstr *a = *arg;
    size_t n = s->bytes_left, k = n < a->cap - 1 ? n : a->cap - 1;
    if (!pb_read(s, (pb_byte_t *)a->dst, k) || !pb_read(s, NULL, n - k)) return false;
    a->dst[k] = 0;
    return true;
}

typedef struct idarg {
    dctx *d;
    uint8_t *dst;
    bool seen;
} idarg;

static bool dec_id(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    idarg *a = *arg;
    if (s->bytes_left != TDM_ID_BYTES) {
        a->d->why = "an id that is not 32 bytes";
        return false;
    }
    a->seen = true;
    return pb_read(s, a->dst, TDM_ID_BYTES);
}

typedef struct u32arg {
    dctx *d;
    size_t off, n;
} u32arg;

/* Packed or not: nanopb hands a packed array's bytes, or one unpacked value's bytes. */
static bool dec_u32s(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    u32arg *a = *arg;
    dctx *d = a->d;
    if (a->n == 0) a->off = d->n_u32s;
    while (s->bytes_left) {
        uint32_t v;
        if (!pb_decode_varint32(s, &v)) return false;
        if (!grow(d, (void **)&d->r->u32s, &d->r->u32s_cap, d->n_u32s + 1, sizeof(uint32_t))) return false;
        d->r->u32s[d->n_u32s++] = v;
        a->n++;
    }
    return true;
}

/* QueryReply is decoded with nanopb's field primitives rather than pb_decode: a reply holds
 * one QueryResult per query, and pb_decode's descriptor walk and defaults cost ~70 ns per
 * result, as much as the server spends on a query. The rules are pb_decode's: fields in any
 * order, the last value of a scalar wins, unknown fields are skipped, a zero tag or a known
 * field with another wire type is refused, a uint32 past 2^32 - 1 is refused; and, as in
 * protobuf-c, a tag or length padded past five bytes. tests/test_codec.c checks it against
 * protobuf-c on random and damaged replies. */
static bool dec_u32(pb_istream_t *s, pb_wire_type_t wt, uint32_t *v, dctx *d)
{
    uint64_t x;
    if (wt != PB_WT_VARINT) {
        d->why = "a field with the wrong wire type";
        return false;
    }
    if (!pb_decode_varint(s, &x)) return false;
    if (x > UINT32_MAX) {
        d->why = "an integer too large";
        return false;
    }
    *v = (uint32_t)x;
    return true;
}

static bool dec_flag(pb_istream_t *s, pb_wire_type_t wt, uint32_t *v, dctx *d)
{
    bool b;
    if (wt != PB_WT_VARINT) {
        d->why = "a field with the wrong wire type";
        return false;
    }
    if (!pb_decode_bool(s, &b)) return false;
    *v = b;
    return true;
}

/* The next field's tag; false at a malformed or zero tag, or one padded past the five bytes
 * a 32-bit varint needs (nanopb reads up to ten, protobuf-c and the protobuf spec five). */
static bool dec_tag(pb_istream_t *s, pb_wire_type_t *wt, uint32_t *tag, dctx *d)
{
    bool eof;
    size_t before = s->bytes_left;
    if (!pb_decode_tag(s, wt, tag, &eof)) return false;
    if (*tag == 0 || before - s->bytes_left > 5) {
        d->why = *tag == 0 ? "a zero field tag" : "an over-long field tag";
        return false;
    }
    return true;
}

/* A length-delimited field as a substream; false when it is not one (or its length is
 * over-long, as for tags). */
static bool dec_sub(pb_istream_t *s, pb_wire_type_t wt, pb_istream_t *sub, dctx *d)
{
    if (wt != PB_WT_STRING) {
        d->why = "a field with the wrong wire type";
        return false;
    }
    size_t before = s->bytes_left;
    if (!pb_make_string_substream(s, sub)) return false;
    if (before - s->bytes_left - sub->bytes_left > 5) {
        d->why = "an over-long length";
        return false;
    }
    return true;
}

/* An unknown field, skipped under the same limits (a varint of at most ten bytes). */
static bool dec_skip(pb_istream_t *s, pb_wire_type_t wt, dctx *d)
{
    uint64_t v;
    pb_istream_t sub;
    if (wt == PB_WT_VARINT) return pb_decode_varint(s, &v);
    if (wt == PB_WT_STRING) return dec_sub(s, wt, &sub, d) && pb_close_string_substream(s, &sub);
    return pb_skip_field(s, wt);
}

/* Keeps the first reason a field failed: ours, else nanopb's for the stream it failed on
 * (a substream's message does not reach the outer stream). Returns false. */
static bool fail(dctx *d, const pb_istream_t *s)
{
#ifndef PB_NO_ERRMSG
    if (!d->why) d->why = s->errmsg;
#else
    (void)s;
#endif
    return false;
}

static bool dec_pair(pb_istream_t *s, dctx *d)
{
    tdm_contact v = {0, 0, 0, 0};
    while (s->bytes_left) {
        uint32_t tag;
        pb_wire_type_t wt;
        if (!dec_tag(s, &wt, &tag, d)) return fail(d, s);
        bool ok;
        switch (tag) {
        case 1: ok = dec_u32(s, wt, &v.object_a, d); break;
        case 2: ok = dec_u32(s, wt, &v.triangle_a, d); break;
        case 3: ok = dec_u32(s, wt, &v.object_b, d); break;
        case 4: ok = dec_u32(s, wt, &v.triangle_b, d); break;
        default: ok = dec_skip(s, wt, d); break;
        }
        if (!ok) return fail(d, s);
    }
    if (!d->qs || !d->qs->want_pairs) return true; /* not asked for: skipped */
    tdm_pairs *up = d->qs->pairs;
    if (up) {
        if (d->n_pairs < up->cap) up->data[d->n_pairs] = v;
    } else {
        if (!grow(d, (void **)&d->r->pairs, &d->r->pairs_cap, d->n_pairs + 1, sizeof v)) return false;
        d->r->pairs[d->n_pairs] = v;
    }
    d->n_pairs++;
    d->cur_pairs++;
    return true;
}

static bool dec_result(pb_istream_t *s, dctx *d)
{
    if (d->qs && d->qs->n_expected && d->n_results >= d->qs->n_expected) {
        d->why = "more query results than queries sent";
        return false;
    }
    if (!d->qs || !d->qs->results) {
        if (!grow(d, (void **)&d->r->results, &d->r->results_cap, d->n_results + 1, sizeof *d->r->results))
            return false;
        d->results = d->r->results;
    }
    tdm_query_result q = {0};
    q.first_pair = d->n_pairs;
    d->cur_pairs = 0;
    while (s->bytes_left) {
        uint32_t tag;
        pb_wire_type_t wt;
        if (!dec_tag(s, &wt, &tag, d)) return fail(d, s);
        bool ok;
        pb_istream_t sub;
        switch (tag) {
        case 1: ok = dec_flag(s, wt, &q.colliding, d); break;
        case 2: ok = dec_u32(s, wt, &q.object_a, d); break;
        case 3: ok = dec_u32(s, wt, &q.object_b, d); break;
        case 4: ok = dec_u32(s, wt, &q.contacts, d); break;
        case 5: ok = dec_flag(s, wt, &q.truncated, d); break;
        case 6: ok = dec_sub(s, wt, &sub, d) && dec_pair(&sub, d) && pb_close_string_substream(s, &sub); break;
        default: ok = dec_skip(s, wt, d); break;
        }
        if (!ok) return fail(d, s);
    }
    q.n_pairs = (uint32_t)d->cur_pairs;
    d->results[d->n_results++] = q;
    return true;
}

static bool dec_query_reply(pb_istream_t *s, dctx *d)
{
    while (s->bytes_left) {
        uint32_t tag;
        pb_wire_type_t wt;
        if (!dec_tag(s, &wt, &tag, d)) return fail(d, s);
        pb_istream_t sub;
        if (tag == 1) {
            if (!dec_sub(s, wt, &sub, d) || !dec_result(&sub, d) || !pb_close_string_substream(s, &sub))
                return fail(d, s);
        } else if (!dec_skip(s, wt, d)) {
            return fail(d, s);
        }
    }
    return true;
}

static bool dec_mesh_info(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    dctx *d = *arg;
    if (!grow(d, (void **)&d->r->meshes, &d->r->meshes_cap, d->n_meshes + 1, sizeof *d->r->meshes)) return false;
    tdm_mesh_info *mi = &d->r->meshes[d->n_meshes];
    memset(mi, 0, sizeof *mi);
    tandem_v1_MeshInfo m = tandem_v1_MeshInfo_init_zero;
    idarg id = {d, mi->mesh_id, false};
    strarg name = {d, 0};
    m.mesh_id.funcs.decode = dec_id;
    m.mesh_id.arg = &id;
    m.name.funcs.decode = dec_arena_string;
    m.name.arg = &name;
    if (!pb_decode(s, tandem_v1_MeshInfo_fields, &m)) return false;
    if (!id.seen) {
        d->why = "a mesh without an id";
        return false;
    }
    mi->name = (const char *)(uintptr_t)name.off; /* fixed up at the end */
    mi->n_vertices = m.n_vertices;
    mi->n_triangles = m.n_triangles;
    mi->scenes = m.scenes;
    mi->robots = m.robots;
    d->n_meshes++;
    return true;
}

static bool dec_scene_info(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    dctx *d = *arg;
    if (!grow(d, (void **)&d->r->scenes, &d->r->scenes_cap, d->n_scenes + 1, sizeof *d->r->scenes)) return false;
    tdm_scene_info *si = &d->r->scenes[d->n_scenes];
    memset(si, 0, sizeof *si);
    tandem_v1_SceneInfo m = tandem_v1_SceneInfo_init_zero;
    idarg id = {d, si->scene_id, false};
    strarg name = {d, 0};
    u32arg mov = {d, 0, 0};
    idarg rid = {d, si->robot_id, false};
    m.robot_id.funcs.decode = dec_id;
    m.robot_id.arg = &rid;
    m.scene_id.funcs.decode = dec_id;
    m.scene_id.arg = &id;
    m.name.funcs.decode = dec_arena_string;
    m.name.arg = &name;
    m.movable.funcs.decode = dec_u32s;
    m.movable.arg = &mov;
    if (!pb_decode(s, tandem_v1_SceneInfo_fields, &m)) return false;
    if (!id.seen) {
        d->why = "a scene without an id";
        return false;
    }
    si->name = (const char *)(uintptr_t)name.off;
    si->n_objects = m.n_objects;
    si->movable = (const uint32_t *)(uintptr_t)mov.off;
    si->n_movable = mov.n;
    si->is_robot_scene = rid.seen;
    d->n_scenes++;
    return true;
}

/* Robot replies: joints, robots and objects go into the reader's scratch arrays; strings
 * and the joints of each robot are offsets until the end of the reply. */
typedef struct jointsarg {
    dctx *d;
    size_t off, n;
} jointsarg;

static bool dec_joint(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    jointsarg *a = *arg;
    dctx *d = a->d;
    if (a->n == 0) a->off = d->n_joints;
    if (!grow(d, (void **)&d->r->joints, &d->r->joints_cap, d->n_joints + 1, sizeof *d->r->joints)) return false;
    tandem_v1_RobotJoint m = tandem_v1_RobotJoint_init_zero;
    strarg name = {d, 0};
    m.name.funcs.decode = dec_arena_string;
    m.name.arg = &name;
    if (!pb_decode(s, tandem_v1_RobotJoint_fields, &m)) return false;
    tdm_joint_info *j = &d->r->joints[d->n_joints++];
    j->name = (const char *)(uintptr_t)name.off;
    j->lower = m.lower;
    j->upper = m.upper;
    a->n++;
    return true;
}

static bool dec_robot_info(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    dctx *d = *arg;
    if (!grow(d, (void **)&d->r->robots, &d->r->robots_cap, d->n_robots + 1, sizeof *d->r->robots)) return false;
    tdm_robot_info *ri = &d->r->robots[d->n_robots];
    memset(ri, 0, sizeof *ri);
    tandem_v1_RobotInfo m = tandem_v1_RobotInfo_init_zero;
    idarg id = {d, ri->robot_id, false};
    strarg name = {d, 0};
    jointsarg ja = {d, 0, 0};
    m.robot_id.funcs.decode = dec_id;
    m.robot_id.arg = &id;
    m.name.funcs.decode = dec_arena_string;
    m.name.arg = &name;
    m.joints.funcs.decode = dec_joint;
    m.joints.arg = &ja;
    if (!pb_decode(s, tandem_v1_RobotInfo_fields, &m)) return false;
    if (!id.seen) {
        d->why = "a robot without an id";
        return false;
    }
    ri->name = (const char *)(uintptr_t)name.off;
    ri->joints = (const tdm_joint_info *)(uintptr_t)ja.off;
    ri->n_joints = ja.n;
    ri->n_links = m.n_links;
    ri->n_elements = m.n_elements;
    ri->scenes = m.scenes;
    d->n_robots++;
    return true;
}

static bool dec_robot_object(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    dctx *d = *arg;
    if (!grow(d, (void **)&d->r->objects, &d->r->objects_cap, d->n_objects + 1, sizeof *d->r->objects)) return false;
    tandem_v1_RobotSceneObject m = tandem_v1_RobotSceneObject_init_zero;
    strarg link = {d, 0}, wo = {d, 0};
    m.link.funcs.decode = dec_arena_string;
    m.link.arg = &link;
    m.world_object.funcs.decode = dec_arena_string;
    m.world_object.arg = &wo;
    if (!pb_decode(s, tandem_v1_RobotSceneObject_fields, &m)) return false;
    tdm_robot_object *o = &d->r->objects[d->n_objects++];
    o->object_id = m.object_id;
    o->movable = m.attached ? 2 : m.movable;
    o->link = (const char *)(uintptr_t)link.off;
    o->element = m.element;
    o->world_object = (const char *)(uintptr_t)wo.off;
    o->shape = m.shape;
    return true;
}

/* Packed or not, as dec_u32s: doubles into the reader's scratch. */
typedef struct dblarg {
    dctx *d;
    size_t off, n;
} dblarg;

static bool dec_doubles(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    dblarg *a = *arg;
    dctx *d = a->d;
    if (a->n == 0) a->off = d->n_doubles;
    while (s->bytes_left) {
        uint64_t v;
        if (!pb_decode_fixed64(s, &v)) return false;
        if (!grow(d, (void **)&d->r->doubles, &d->r->doubles_cap, d->n_doubles + 1, sizeof(double))) return false;
        memcpy(&d->r->doubles[d->n_doubles++], &v, sizeof(double));
        a->n++;
    }
    return true;
}

static bool dec_motion_result(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    dctx *d = *arg;
    if (!grow(d, (void **)&d->r->motions, &d->r->motions_cap, d->n_motions + 1, sizeof *d->r->motions)) return false;
    tandem_v1_MotionResult m = tandem_v1_MotionResult_init_zero;
    dblarg da = {d, 0, 0};
    m.last_free.funcs.decode = dec_doubles;
    m.last_free.arg = &da;
    if (!pb_decode(s, tandem_v1_MotionResult_fields, &m)) return false;
    tdm_motion_result *o = &d->r->motions[d->n_motions++];
    o->first_colliding = m.first_colliding;
    o->n_states = m.n_states;
    o->last_free = (const double *)(uintptr_t)da.off;
    o->n_last_free = da.n;
    return true;
}

static void copy_limits(tdm_limits *o, const tandem_v1_Limits *l)
{
    o->max_frame_bytes = l->max_frame_bytes;
    o->max_vertices = l->max_vertices;
    o->max_triangles = l->max_triangles;
    o->max_objects = l->max_objects;
    o->max_queries = l->max_queries;
    o->max_contacts = l->max_contacts;
    o->max_pipelined = l->max_pipelined;
    o->max_connections = l->max_connections;
    o->max_meshes_bytes = l->max_meshes_bytes;
    o->max_robots = l->max_robots;
    o->max_robot_text_bytes = l->max_robot_text_bytes;
    o->max_motion_states = l->max_motion_states;
    o->max_query_work = l->max_query_work;
    o->max_reply_pairs = l->max_reply_pairs;
    o->max_ring_bytes = l->max_ring_bytes;
    o->max_query_tasks = l->max_query_tasks;
    o->max_scene_triangles = l->max_scene_triangles;
    o->max_robot_triangles = l->max_robot_triangles;
}

static const char empty_string[] = "";

int tdm__decode(tdm_reader *r, const tdm__frame *f, const tdm__qsink *qs)
{
    tdm_reply *rep = &r->reply;
    memset(rep, 0, sizeof *rep);
    rep->id = f->id;
    rep->type = f->type;
    rep->error.message = rep->error.field = empty_string;
    rep->error.index = -1;

    dctx d = {.r = r, .qs = qs, .n_chars = 1};
    if (qs && qs->results) {
        d.results = qs->results;
        d.results_cap = qs->n_expected;
    }
    if (qs && qs->pairs) qs->pairs->count = 0;
    pb_istream_t s = pb_istream_from_buffer(f->body, f->body_len);
    bool ok = false;
    strarg s1 = {&d, 0}, s2 = {&d, 0};
    idarg id, id2;
    u32arg mov = {&d, 0, 0};
    jointsarg ja = {&d, 0, 0};

    switch (f->type) {
    case TDM_REPLY_ERROR: {
        tandem_v1_Error m = tandem_v1_Error_init_zero;
        m.index = -1;
        m.message.funcs.decode = dec_arena_string;
        m.message.arg = &s1;
        m.field.funcs.decode = dec_arena_string;
        m.field.arg = &s2;
        ok = pb_decode(&s, tandem_v1_Error_fields, &m);
        rep->status = TDM_CLIENT_ESERVER;
        rep->error.code = (int)m.code;
        rep->error.index = m.index;
        break;
    }
    case TDM_REPLY_HELLO: {
        tandem_v1_HelloReply m = tandem_v1_HelloReply_init_zero;
        fixstr v = {rep->u.hello.server_version, sizeof rep->u.hello.server_version};
        m.server_version.funcs.decode = dec_fixed_string;
        m.server_version.arg = &v;
        ok = pb_decode(&s, tandem_v1_HelloReply_fields, &m);
        rep->u.hello.protocol_version = m.protocol_version;
        rep->u.hello.engine = (int)m.engine;
        copy_limits(&rep->u.hello.limits, &m.limits);
        break;
    }
    case TDM_REPLY_MESH_PUT: {
        tandem_v1_MeshPutReply m = tandem_v1_MeshPutReply_init_zero;
        id = (idarg){&d, rep->u.mesh_put.mesh_id, false};
        m.mesh_id.funcs.decode = dec_id;
        m.mesh_id.arg = &id;
        ok = pb_decode(&s, tandem_v1_MeshPutReply_fields, &m);
        if (ok && !id.seen) {
            ok = false;
            d.why = "a MeshPutReply without mesh_id";
        }
        rep->u.mesh_put.created = m.created;
        rep->u.mesh_put.n_vertices = m.n_vertices;
        rep->u.mesh_put.n_triangles = m.n_triangles;
        break;
    }
    case TDM_REPLY_MESH_LIST: {
        tandem_v1_MeshListReply m = tandem_v1_MeshListReply_init_zero;
        m.meshes.funcs.decode = dec_mesh_info;
        m.meshes.arg = &d;
        ok = pb_decode(&s, tandem_v1_MeshListReply_fields, &m);
        break;
    }
    case TDM_REPLY_ROBOT_PUT: {
        tandem_v1_RobotPutReply m = tandem_v1_RobotPutReply_init_zero;
        id = (idarg){&d, rep->u.robot_put.robot_id, false};
        m.robot_id.funcs.decode = dec_id;
        m.robot_id.arg = &id;
        m.joints.funcs.decode = dec_joint;
        m.joints.arg = &ja;
        ok = pb_decode(&s, tandem_v1_RobotPutReply_fields, &m);
        if (ok && !id.seen) {
            ok = false;
            d.why = "a RobotPutReply without robot_id";
        }
        rep->u.robot_put.created = m.created;
        rep->u.robot_put.n_links = m.n_links;
        rep->u.robot_put.n_elements = m.n_elements;
        rep->u.robot_put.n_joints = ja.n;
        break;
    }
    case TDM_REPLY_ROBOT_LIST: {
        tandem_v1_RobotListReply m = tandem_v1_RobotListReply_init_zero;
        m.robots.funcs.decode = dec_robot_info;
        m.robots.arg = &d;
        ok = pb_decode(&s, tandem_v1_RobotListReply_fields, &m);
        break;
    }
    case TDM_REPLY_ROBOT_SCENE_PUT: {
        tandem_v1_RobotScenePutReply m = tandem_v1_RobotScenePutReply_init_zero;
        tdm_robot_scene_info *o = &rep->u.robot_scene_put;
        id = (idarg){&d, o->scene_id, false};
        id2 = (idarg){&d, o->robot_id, false};
        m.scene_id.funcs.decode = dec_id;
        m.scene_id.arg = &id;
        m.robot_id.funcs.decode = dec_id;
        m.robot_id.arg = &id2;
        m.joints.funcs.decode = dec_joint;
        m.joints.arg = &ja;
        m.objects.funcs.decode = dec_robot_object;
        m.objects.arg = &d;
        ok = pb_decode(&s, tandem_v1_RobotScenePutReply_fields, &m);
        if (ok && (!id.seen || !id2.seen)) {
            ok = false;
            d.why = "a RobotScenePutReply without scene_id or robot_id";
        }
        o->created = m.created;
        o->n_joints = ja.n;
        o->n_objects = d.n_objects;
        o->n_checks = m.n_checks;
        break;
    }
    case TDM_REPLY_MOTION_CHECK: {
        tandem_v1_MotionCheckReply m = tandem_v1_MotionCheckReply_init_zero;
        m.results.funcs.decode = dec_motion_result;
        m.results.arg = &d;
        ok = pb_decode(&s, tandem_v1_MotionCheckReply_fields, &m);
        break;
    }
    case TDM_REPLY_ROBOT_DELETE:
    case TDM_REPLY_MESH_DELETE:
    case TDM_REPLY_SCENE_DELETE: {
        tandem_v1_Deleted m = tandem_v1_Deleted_init_zero;
        ok = pb_decode(&s, tandem_v1_Deleted_fields, &m);
        break;
    }
    case TDM_REPLY_SCENE_PUT: {
        tandem_v1_ScenePutReply m = tandem_v1_ScenePutReply_init_zero;
        id = (idarg){&d, rep->u.scene_put.scene_id, false};
        m.scene_id.funcs.decode = dec_id;
        m.scene_id.arg = &id;
        m.movable.funcs.decode = dec_u32s;
        m.movable.arg = &mov;
        ok = pb_decode(&s, tandem_v1_ScenePutReply_fields, &m);
        if (ok && !id.seen) {
            ok = false;
            d.why = "a ScenePutReply without scene_id";
        }
        rep->u.scene_put.created = m.created;
        rep->u.scene_put.n_movable = mov.n;
        break;
    }
    case TDM_REPLY_SCENE_LIST: {
        tandem_v1_SceneListReply m = tandem_v1_SceneListReply_init_zero;
        m.scenes.funcs.decode = dec_scene_info;
        m.scenes.arg = &d;
        ok = pb_decode(&s, tandem_v1_SceneListReply_fields, &m);
        break;
    }
    case TDM_REPLY_QUERY: {
        ok = dec_query_reply(&s, &d);
        if (ok && qs && qs->n_expected && d.n_results != qs->n_expected) {
            ok = false;
            d.why = "fewer query results than queries sent";
        }
        break;
    }
    case TDM_REPLY_RING_OPEN: {
        tandem_v1_RingOpenReply m = tandem_v1_RingOpenReply_init_zero;
        ok = pb_decode(&s, tandem_v1_RingOpenReply_fields, &m);
        rep->u.ring_open.bytes = m.bytes;
        break;
    }
    case TDM_REPLY_STATS: {
        tandem_v1_StatsReply m = tandem_v1_StatsReply_init_zero;
        tdm_stats *o = &rep->u.stats;
        fixstr v = {o->server_version, sizeof o->server_version}, e = {o->engine_detail, sizeof o->engine_detail};
        m.server_version.funcs.decode = dec_fixed_string;
        m.server_version.arg = &v;
        m.engine_detail.funcs.decode = dec_fixed_string;
        m.engine_detail.arg = &e;
        ok = pb_decode(&s, tandem_v1_StatsReply_fields, &m);
        o->engine = (int)m.engine;
        o->uptime_s = m.uptime_s;
        o->connections = m.connections;
        o->requests = m.requests;
        o->errors = m.errors;
        o->queries = m.queries;
        o->batches = m.batches;
        o->mean_batch_queries = m.mean_batch_queries;
        o->mean_batch_tasks = m.mean_batch_tasks;
        o->meshes = m.meshes;
        o->scenes = m.scenes;
        o->meshes_bytes = m.meshes_bytes;
        o->engine_seconds = m.engine_seconds;
        o->cpu_queries = m.cpu_queries;
        o->gpu_queries = m.gpu_queries;
        o->gpu_seconds = m.gpu_seconds;
        o->hybrid_queries = m.hybrid_queries;
        o->cpu_tasks = m.cpu_tasks;
        o->gpu_tasks = m.gpu_tasks;
        o->hybrid_tasks = m.hybrid_tasks;
        o->mean_workpile_pairs = m.mean_workpile_pairs;
        o->gpu_iterations = m.gpu_iterations;
        o->device_bytes = m.device_bytes;
        o->device_meshes = m.device_meshes;
        o->dispatch_threshold = m.dispatch_threshold;
        o->robots = m.robots;
        break;
    }
    default:
        d.why = "an unknown reply type";
        break;
    }
    if (!ok) {
        if (d.err == TDM_CLIENT_ENOMEM)
            return reader_fail(r, TDM_CLIENT_ENOMEM, "out of memory while decoding a reply (id %llu)",
                               (unsigned long long)f->id);
        return reader_fail(r, TDM_CLIENT_EPROTO, "the server sent a malformed reply (id %llu): %s",
                           (unsigned long long)f->id, d.why ? d.why : (PB_GET_ERROR(&s) ? PB_GET_ERROR(&s) : "?"));
    }

    /* Offsets become pointers now that the arenas have stopped moving. */
    const char *chars = r->chars;
    if (f->type == TDM_REPLY_ERROR) {
        rep->error.message = chars + s1.off;
        rep->error.field = chars + s2.off;
    } else if (f->type == TDM_REPLY_MESH_LIST) {
        for (size_t i = 0; i < d.n_meshes; i++) r->meshes[i].name = chars + (uintptr_t)r->meshes[i].name;
        rep->u.mesh_list.meshes = r->meshes;
        rep->u.mesh_list.n = d.n_meshes;
    } else if (f->type == TDM_REPLY_SCENE_LIST) {
        for (size_t i = 0; i < d.n_scenes; i++) {
            r->scenes[i].name = chars + (uintptr_t)r->scenes[i].name;
            /* NULL when none: the scratch may be unallocated (no pointer arithmetic on NULL) */
            r->scenes[i].movable = r->scenes[i].n_movable ? r->u32s + (uintptr_t)r->scenes[i].movable : NULL;
        }
        rep->u.scene_list.scenes = r->scenes;
        rep->u.scene_list.n = d.n_scenes;
    } else if (f->type == TDM_REPLY_SCENE_PUT) {
        rep->u.scene_put.movable = mov.n ? r->u32s + mov.off : NULL;
    } else if (f->type == TDM_REPLY_MOTION_CHECK) {
        for (size_t i = 0; i < d.n_motions; i++)
            r->motions[i].last_free =
                r->motions[i].n_last_free ? r->doubles + (uintptr_t)r->motions[i].last_free : NULL;
        rep->u.motion_check.results = r->motions;
        rep->u.motion_check.n = d.n_motions;
    } else if (f->type == TDM_REPLY_ROBOT_PUT || f->type == TDM_REPLY_ROBOT_LIST ||
               f->type == TDM_REPLY_ROBOT_SCENE_PUT) {
        for (size_t i = 0; i < d.n_joints; i++) r->joints[i].name = chars + (uintptr_t)r->joints[i].name;
        if (f->type == TDM_REPLY_ROBOT_PUT) {
            rep->u.robot_put.name = empty_string;
            rep->u.robot_put.joints = ja.n ? r->joints + ja.off : NULL;
        } else if (f->type == TDM_REPLY_ROBOT_LIST) {
            for (size_t i = 0; i < d.n_robots; i++) {
                r->robots[i].name = chars + (uintptr_t)r->robots[i].name;
                r->robots[i].joints = r->robots[i].n_joints ? r->joints + (uintptr_t)r->robots[i].joints : NULL;
            }
            rep->u.robot_list.robots = r->robots;
            rep->u.robot_list.n = d.n_robots;
        } else {
            for (size_t i = 0; i < d.n_objects; i++) {
                r->objects[i].link = chars + (uintptr_t)r->objects[i].link;
                r->objects[i].world_object = chars + (uintptr_t)r->objects[i].world_object;
            }
            rep->u.robot_scene_put.joints = ja.n ? r->joints + ja.off : NULL;
            rep->u.robot_scene_put.objects = d.n_objects ? r->objects : NULL;
        }
    } else if (f->type == TDM_REPLY_QUERY) {
        rep->u.query.results = d.results;
        rep->u.query.n = d.n_results;
        if (qs && qs->pairs) {
            qs->pairs->count = d.n_pairs;
            rep->u.query.pairs = qs->pairs->data;
        } else {
            rep->u.query.pairs = r->pairs;
        }
        rep->u.query.n_pairs = d.n_pairs;
    }
    return 0;
}

/* ---- the public reader ------------------------------------------------------------------- */

tdm_reader *tdm_reader_new(uint32_t max_reply_bytes)
{
    tdm_reader *r = malloc(sizeof *r);
    if (!r) return NULL;
    if (tdm__reader_init(r, max_reply_bytes)) {
        free(r);
        return NULL;
    }
    return r;
}

void tdm_reader_free(tdm_reader *r)
{
    if (!r) return;
    tdm__reader_deinit(r);
    free(r);
}

int tdm_reader_feed(tdm_reader *r, const void *buf, size_t len)
{
    uint8_t *p = NULL;
    size_t avail = 0;
    if (len == 0) return 0;
    if (!buf) return TDM_CLIENT_EINVAL;
    int rc = tdm__reader_space(r, len, &p, &avail);
    if (rc) return rc;
    memcpy(p, buf, len);
    tdm__reader_commit(r, len);
    return 0;
}

int tdm_reader_get_reply(tdm_reader *r, const tdm_reply **out)
{
    const uint8_t *frame = NULL;
    size_t len = 0;
    tdm__frame f;
    int rc = tdm__reader_next(r, &frame, &len);
    if (rc <= 0) return rc;
    tdm__qsink all = {NULL, 0, 1, NULL}; /* no request to check against: keep every result and pair */
    if ((rc = tdm__frame_parse(r, frame, len, &f)) || (rc = tdm__decode(r, &f, &all))) return rc;
    *out = &r->reply;
    return 1;
}

const char *tdm_reader_errstr(const tdm_reader *r)
{
    return r->err ? r->errstr : "";
}
