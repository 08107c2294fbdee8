/* Writes the seed corpus (fuzz/corpus/<harness>/) from valid messages:
 *
 *   fuzz_gen_corpus DIR
 *
 * It starts tandemd in process with the fixture (daemon_fixture.h), so that the
 * request seeds carry the fixture's real ids; the reply seeds are the replies
 * those requests got; the data directory seeds are the files the writer wrote;
 * the tree blob seeds are the stored mesh's tree and a larger one. Every seed
 * is deterministic (ids are content hashes), so running it again rewrites the
 * same files (but for the figures of the Stats replies: uptime, counters). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/daemon_fixture.h"
#include "fuzz/fixture.h"
#include "geom/bvh.h"

static const char *out_dir;

static void put(const char *harness, const char *name, const uint8_t *head, size_t head_len, const void *body,
                size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", out_dir, harness);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, harness, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(head, 1, head_len, f) != head_len || (len && fwrite(body, 1, len, f) != len) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static fuzz_daemon d;

/* One request seed: the frames in b after the two header bytes (Hello added by
 * the harness), and the replies they got as a client_replies seed. */
static void request_seed(const char *name, fuzz_bytes *b, uint8_t chunk, uint8_t expect)
{
    uint8_t head[2] = {1, chunk};
    put("daemon_requests", name, head, 2, b->data, b->len);
    fuzz_bytes in = {0}, out = {0};
    fuzz_req_hello(&in, 0x4845);
    fuzz_bytes_append(&in, b->data, b->len);
    fuzz_daemon_session(&d, in.data, in.len, 0, &out);
    fuzz_daemon_restore(&d);
    uint8_t rhead[2] = {0, expect};
    put("client_replies", name, rhead, 2, out.data, out.len);
    fuzz_bytes_free(&in);
    fuzz_bytes_free(&out);
    fuzz_bytes_free(b);
}

static void file_seeds(int kind, const char *sub)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s", d.cfg.data_dir, sub);
    DIR *dd = opendir(dir);
    if (!dd) {
        perror(dir);
        exit(1);
    }
    struct dirent *e;
    while ((e = readdir(dd))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        fuzz_bytes b = {0};
        uint8_t buf[4096];
        size_t n;
        while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) fuzz_bytes_append(&b, buf, n);
        if (f) fclose(f);
        if (b.len < 64) {
            fprintf(stderr, "%s: too short\n", path);
            exit(1);
        }
        char name[64];
        uint8_t head = (uint8_t)kind;
        snprintf(name, sizeof name, "%s-payload", sub);
        put("datadir", name, &head, 1, b.data + 64, b.len - 64);
        head |= 4;
        snprintf(name, sizeof name, "%s-file", sub);
        put("datadir", name, &head, 1, b.data, b.len);
        if (kind == 0) { /* the mesh's tree blob: after the payload's 24-byte head, the name and the canon */
            const uint8_t *p = b.data + 64;
            uint32_t name_len;
            uint64_t canon_len, blob_len;
            memcpy(&name_len, p, 4);
            memcpy(&canon_len, p + 8, 8);
            memcpy(&blob_len, p + 16, 8);
            const uint8_t *blob = p + 24 + name_len + canon_len;
            uint8_t fix = 0;
            put("bvh_blob", "arm-stl", &fix, 1, blob, (size_t)blob_len);
            fix = 1;
            put("bvh_blob", "arm-stl-fixed", &fix, 1, blob, (size_t)blob_len);
        }
        fuzz_bytes_free(&b);
    }
    closedir(dd);
}

/* A tree of a few dozen triangles (a grid, bent), for the blob harness. */
static void larger_blob(void)
{
    enum { N = 5 };
    float v[3 * (N + 1) * (N + 1)];
    uint32_t t[6 * N * N];
    uint32_t nv = 0, nt = 0;
    for (int i = 0; i <= N; i++)
        for (int j = 0; j <= N; j++, nv++) {
            v[3 * nv] = (float)i;
            v[3 * nv + 1] = (float)j;
            v[3 * nv + 2] = (float)((i * j) % 3) * 0.25f;
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            uint32_t a = (uint32_t)(i * (N + 1) + j), b = a + 1, c = a + N + 1, e = c + 1;
            uint32_t tri[6] = {a, b, c, b, e, c};
            memcpy(t + 3 * nt, tri, sizeof tri);
            nt += 2;
        }
    tdm_mesh *m;
    tdm_bvh *bvh;
    void *blob;
    size_t len;
    char err[256];
    if (tdm_mesh_create(v, nv, t, nt, NULL, &m, err, sizeof err) != TDM_OK || tdm_bvh_build(m, &bvh) != TDM_OK ||
        tdm_bvh_serialize(bvh, &blob, &len) != TDM_OK) {
        fprintf(stderr, "larger blob: %s\n", err);
        exit(1);
    }
    uint8_t fix = 0;
    put("bvh_blob", "grid", &fix, 1, blob, len);
    fix = 1;
    put("bvh_blob", "grid-fixed", &fix, 1, blob, len);
    free(blob);
    tdm_bvh_free(bvh);
    tdm_mesh_free(m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_gen_corpus DIR\n");
        return 2;
    }
    out_dir = argv[1];
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        perror(out_dir);
        return 1;
    }
    fuzz_daemon_start(&d);
    fuzz_bytes b = {0};
    const uint8_t unknown[TDM_ID_LEN] = {1, 2, 3};

    /* ---- daemon_requests, and their replies for client_replies ---- */
    static const float tet[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    static const uint32_t tet_tris[] = {0, 1, 2, 0, 1, 3, 0, 2, 3, 1, 2, 3};
    static const uint32_t bad_tris[] = {0, 1, 4};
    fuzz_req_mesh_put(&b, 1, "tet", tet, 12, tet_tris, 12);
    request_seed("mesh-put", &b, 0, 0);
    fuzz_req_mesh_put(&b, 1, "bad", tet, 12, bad_tris, 3);
    request_seed("mesh-put-bad-index", &b, 0, 0);
    fuzz_req_mesh_put(&b, 1, "arm.stl", FIXTURE_MESH_VERTS, 3 * FIXTURE_MESH_NV, FIXTURE_MESH_TRIS,
                      3 * FIXTURE_MESH_NT);
    request_seed("mesh-put-chunked", &b, 7, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_MESH_LIST, NULL);
    request_seed("mesh-list", &b, 0, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_MESH_DELETE, d.mesh_id);
    fuzz_req_id(&b, 2, TANDEM__V1__REQUEST__BODY_MESH_DELETE, unknown);
    request_seed("mesh-delete", &b, 0, 0);
    fuzz_req_scene_put(&b, 1, d.mesh_id, 0);
    request_seed("scene-put", &b, 0, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_SCENE_LIST, NULL);
    request_seed("scene-list", &b, 0, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_SCENE_DELETE, d.scene_id);
    request_seed("scene-delete", &b, 0, 0);
    fuzz_req_robot_put(&b, 1, d.mesh_id);
    request_seed("robot-put", &b, 0, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_ROBOT_LIST, NULL);
    request_seed("robot-list", &b, 0, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_ROBOT_DELETE, d.robot_id);
    request_seed("robot-delete", &b, 0, 0);
    fuzz_req_robot_scene_put(&b, 1, d.robot_id, FIXTURE_SCENE_YAML);
    request_seed("robot-scene-put", &b, 0, 0);
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_STATS, NULL);
    request_seed("stats", &b, 0, 0);
    double poses[14] = {0, 0, 0, 0, 0, 0, 1, 0.5, 0, 0, 0, 0, 0.7071067811865476, 0.7071067811865476};
    fuzz_req_query(&b, 1, d.scene_id, 0, poses, 14, NULL, 0, 0, 0);
    request_seed("query-bool", &b, 0, 2);
    fuzz_req_query(&b, 1, d.scene_id, 1, poses, 14, NULL, 0, 4, 1);
    request_seed("query-contacts-pairs", &b, 0, 2 | 1 << 4 | 7 << 5);
    double configs[6] = {0, 0, 1.2, 0.1, -1.5, 0.2};
    fuzz_req_query(&b, 1, d.rscene_id, 0, NULL, 0, configs, 6, 0, 0);
    request_seed("query-configs", &b, 0, 3);
    fuzz_req_query(&b, 1, d.rscene_id, 1, NULL, 0, configs, 6, 8, 1);
    request_seed("query-configs-contacts", &b, 3, 3 | 1 << 4 | 2 << 5);
    /* 64 queries and more: poses converted, and forward kinematics run, on libuv's pool */
    double many[64 * 14], many_configs[64 * 2];
    for (int i = 0; i < 64; i++) {
        memcpy(many + 14 * i, poses, sizeof poses);
        many[14 * i + 7] = 0.01 * i;
        many_configs[2 * i] = -1.5 + 3.0 * i / 63;
        many_configs[2 * i + 1] = 0.2 * i / 63;
    }
    fuzz_req_query(&b, 1, d.scene_id, 0, many, 64 * 14, NULL, 0, 0, 0);
    request_seed("query-offload", &b, 0, 0);
    fuzz_req_query(&b, 1, d.rscene_id, 1, NULL, 0, many_configs, 64 * 2, 2, 1);
    request_seed("query-configs-offload", &b, 0, 0);
    double motions[8] = {-1.5, 0, 1.5, 0.2, 0, 0, 0.5, 0.1};
    fuzz_req_motion(&b, 1, d.rscene_id, 0.1, motions, 8, NULL, 0, 0);
    request_seed("motion-check", &b, 0, 0);
    fuzz_req_motion(&b, 1, d.rscene_id, 0.1, motions, 8, NULL, 0, 1);
    request_seed("motion-check-any", &b, 0, 0);
    double path[6] = {-1.5, 0, 0, 0.1, 1.5, 0.2};
    uint32_t points[1] = {3};
    fuzz_req_motion(&b, 1, d.rscene_id, 0.05, path, 6, points, 1, 0);
    request_seed("motion-check-path", &b, 0, 0);
    /* every type pipelined on one connection, cut into 5-byte writes */
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_MESH_LIST, NULL);
    fuzz_req_id(&b, 2, TANDEM__V1__REQUEST__BODY_SCENE_LIST, NULL);
    fuzz_req_id(&b, 3, TANDEM__V1__REQUEST__BODY_ROBOT_LIST, NULL);
    fuzz_req_query(&b, 4, d.scene_id, 0, poses, 14, NULL, 0, 0, 0);
    fuzz_req_query(&b, 5, d.rscene_id, 1, NULL, 0, configs, 6, 0, 0);
    fuzz_req_motion(&b, 6, d.rscene_id, 0.2, motions, 8, NULL, 0, 0);
    fuzz_req_id(&b, 7, TANDEM__V1__REQUEST__BODY_STATS, NULL);
    request_seed("pipelined", &b, 5, 0);
    /* after the harness's large MeshPut (flag bit 1), a list in 3-byte writes (x 4096) */
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_MESH_LIST, NULL);
    uint8_t head_large[2] = {3, 3};
    put("daemon_requests", "large-frame", head_large, 2, b.data, b.len);
    fuzz_bytes_free(&b);
    /* without the harness's Hello: the gate; a frame of length 0; a frame cut short */
    fuzz_req_id(&b, 1, TANDEM__V1__REQUEST__BODY_STATS, NULL);
    uint8_t head0[2] = {0, 0};
    put("daemon_requests", "no-hello", head0, 2, b.data, b.len);
    fuzz_bytes_free(&b);
    static const uint8_t zero_len[] = {1, 0, 0, 0, 0, 0};
    put("daemon_requests", "frame-length-0", zero_len, sizeof zero_len, NULL, 0);
    static const uint8_t cut[] = {1, 1, 0, 0, 0, 40, 8, 1, 0x92, 1};
    put("daemon_requests", "frame-cut", cut, sizeof cut, NULL, 0);

    /* ---- datadir and bvh_blob: the files the writer wrote ---- */
    file_seeds(0, "meshes");
    file_seeds(1, "scenes");
    file_seeds(2, "robots");
    file_seeds(3, "robot-scenes");
    larger_blob();

    /* ---- urdf and planning_scene ---- */
    fuzz_bytes u = {0};
    fuzz_bytes_append(&u, FIXTURE_URDF, strlen(FIXTURE_URDF));
    uint8_t nul = 0;
    put("urdf", "urdf-only", NULL, 0, u.data, u.len);
    fuzz_bytes_append(&u, &nul, 1);
    fuzz_bytes_append(&u, FIXTURE_SRDF, strlen(FIXTURE_SRDF));
    put("urdf", "urdf-srdf", NULL, 0, u.data, u.len);
    fuzz_bytes_free(&u);
    uint8_t kind = 0;
    put("planning_scene", "scene", &kind, 1, FIXTURE_SCENE_YAML, strlen(FIXTURE_SCENE_YAML));
    kind = 1;
    put("planning_scene", "motion-request", &kind, 1, FIXTURE_MOTION_YAML, strlen(FIXTURE_MOTION_YAML));
    return 0;
}
