/* Harness: libtandem's reply decoder (client/codec.c, nanopb side): bytes from a
 * server, split into frames and decoded into tdm_reply, then every array and
 * string of the reply read back (what an application reading it would touch).
 *
 * Input: two header bytes, then the byte stream from the server.
 *   byte 0: bytes per tdm_reader_feed call (1..256; 0: all at once), so frames
 *           arrive split anywhere;
 *   byte 1: bits 0-3: 0 the public reader (every result and pair kept); else the
 *           blocking client's path, caller-owned room for that many query
 *           results (a Query reply must bring exactly that many), bit 4: pairs
 *           wanted, bits 5-7: room for 0..7 pairs.
 * The reader's frame limit is 1 MiB. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void touch(const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t s = 0;
    for (size_t i = 0; i < n; i++) s += b[i];
    sink += s;
}

static void touch_str(const char *s)
{
    if (!s) abort(); /* the API promises strings, "" when absent */
    sink += strlen(s);
}

static void touch_joints(const tdm_joint_info *j, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        touch_str(j[i].name);
        touch(&j[i].lower, sizeof j[i].lower * 2);
    }
}

static void touch_robot(const tdm_robot_info *r)
{
    touch_str(r->name);
    touch_joints(r->joints, r->n_joints);
}

/* pair_cap: the caller's room for pairs (the blocking client's sink), which n_pairs
 * may exceed (tdm_pairs: only the first cap are stored); SIZE_MAX: the reader's own. */
static void walk(const tdm_reply *rep, size_t pair_cap)
{
    touch_str(rep->error.message);
    touch_str(rep->error.field);
    switch (rep->type) {
    case TDM_REPLY_HELLO: touch_str(rep->u.hello.server_version); break;
    case TDM_REPLY_MESH_LIST:
        for (size_t i = 0; i < rep->u.mesh_list.n; i++) touch_str(rep->u.mesh_list.meshes[i].name);
        break;
    case TDM_REPLY_SCENE_PUT: touch(rep->u.scene_put.movable, rep->u.scene_put.n_movable * 4); break;
    case TDM_REPLY_SCENE_LIST:
        for (size_t i = 0; i < rep->u.scene_list.n; i++) {
            touch_str(rep->u.scene_list.scenes[i].name);
            touch(rep->u.scene_list.scenes[i].movable, rep->u.scene_list.scenes[i].n_movable * 4);
        }
        break;
    case TDM_REPLY_QUERY: {
        const tdm_query_result *q = rep->u.query.results;
        touch(q, rep->u.query.n * sizeof *q);
        size_t np = rep->u.query.n_pairs < pair_cap ? rep->u.query.n_pairs : pair_cap;
        touch(rep->u.query.pairs, np * sizeof *rep->u.query.pairs);
        break;
    }
    case TDM_REPLY_STATS:
        touch_str(rep->u.stats.server_version);
        touch_str(rep->u.stats.engine_detail);
        break;
    case TDM_REPLY_ROBOT_PUT: touch_robot(&rep->u.robot_put); break;
    case TDM_REPLY_ROBOT_LIST:
        for (size_t i = 0; i < rep->u.robot_list.n; i++) touch_robot(&rep->u.robot_list.robots[i]);
        break;
    case TDM_REPLY_ROBOT_SCENE_PUT: {
        const tdm_robot_scene_info *s = &rep->u.robot_scene_put;
        touch_joints(s->joints, s->n_joints);
        for (size_t i = 0; i < s->n_objects; i++) {
            touch_str(s->objects[i].link);
            touch_str(s->objects[i].world_object);
        }
        break;
    }
    case TDM_REPLY_MOTION_CHECK:
        for (size_t i = 0; i < rep->u.motion_check.n; i++)
            touch(rep->u.motion_check.results[i].last_free, rep->u.motion_check.results[i].n_last_free * 8);
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t chunk = data[0] ? data[0] : size;
    unsigned mode = data[1];
    data += 2;
    size -= 2;
    tdm_reader r;
    if (tdm__reader_init(&r, 1u << 20) != 0) return 0;
    size_t n_expected = mode & 15;
    tdm_query_result results[15];
    tdm_contact pair_room[7];
    tdm_pairs pairs = {pair_room, mode >> 5, 0};
    tdm__qsink own = {results, n_expected, (mode >> 4) & 1, (mode >> 4) & 1 ? &pairs : NULL};
    tdm__qsink all = {NULL, 0, 1, NULL};
    const tdm__qsink *qs = n_expected ? &own : &all;
    for (size_t off = 0; off < size;) {
        size_t n = size - off < chunk ? size - off : chunk;
        uint8_t *p;
        size_t avail;
        if (tdm__reader_space(&r, n, &p, &avail) != 0) break;
        memcpy(p, data + off, n);
        tdm__reader_commit(&r, n);
        off += n;
        for (;;) {
            const uint8_t *frame;
            size_t len;
            tdm__frame f;
            int rc = tdm__reader_next(&r, &frame, &len);
            if (rc <= 0) {
                if (rc < 0) goto out;
                break;
            }
            if (tdm__frame_parse(&r, frame, len, &f) != 0) goto out;
            if (tdm__decode(&r, &f, qs) != 0) continue; /* a bad reply: the next one may still be read */
            walk(&r.reply, qs == &own && own.pairs ? pairs.cap : SIZE_MAX);
        }
    }
out:
    touch_str(r.err ? r.errstr : "");
    tdm__reader_deinit(&r);
    return 0;
}
