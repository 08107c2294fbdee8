/* Shared-memory rings for same-host clients (RingOpen; proto/shm_ring.h, proto/README.md
 * "Shared-memory rings"): a real tandemd per test (daemon_util.h), libtandem clients that
 * open rings (tdm_client_ring) next to plain ones on the same Unix socket, and raw ring
 * clients that map the memfd themselves and write into it what no well-behaved client would.
 *
 *   answers_match_the_socket         500 poses, bool and contacts, one pose a call through a
 *                                    ring client and in batches over the socket: identical
 *                                    answers, equal to brute force (pairs too, with
 *                                    want_pairs); meshes and scene stored through the ring
 *                                    get the README's ids; the server counts every query once
 *   frames_larger_than_the_ring      64 KiB rings: a MeshPut, a Query request and its reply,
 *                                    each larger than the ring, stream through it; answers
 *                                    equal the socket's, also with two such queries pipelined
 *   pipelined_through_the_ring       64 tdm_query_send of 1 to 8 poses, then tdm_query_wait:
 *                                    each id handed back once, answers equal the socket's
 *                                    and brute force
 *   spin_client                      spin_us 50: the same answers as the socket's and brute force
 *   refusals_keep_the_connection     HelloReply.limits.max_ring_bytes; RingOpen refused (Error
 *                                    BAD_REQUEST, field "ring_open") on TCP, with a request
 *                                    after it in the same write, and under --max-ring-bytes 0;
 *                                    refused before Hello (UNAUTHENTICATED); EINVAL with a query
 *                                    in flight or rings already open; every refused connection
 *                                    is then served as before
 *   hostile_ring_client              a raw client: the RingOpenReply's memfd (its size, its
 *                                    seals: ftruncate fails with EPERM), a StatsRequest written
 *                                    by hand answered in the reply ring (nothing on the
 *                                    socket), a second RingOpen refused in the ring; then
 *                                    req_head past the ring, or rep_tail past rep_head: that
 *                                    connection alone is closed (`closed` = 1, then EOF), the
 *                                    daemon and a bystander go on
 *   garbage_frame_in_the_ring        frame length 0 or 0xFFFFFFFF in the ring: the socket's
 *                                    Error (field "frame", BAD_REQUEST or LIMIT) in the reply
 *                                    ring, then the close; an undecodable frame: the Error,
 *                                    and the connection goes on
 *   client_dies_mid_request          21 raw ring clients hang up inside a frame (or before
 *                                    their reply): the daemon drops them all (stats:
 *                                    connections back to 1) and serves the next clients
 *   server_stop_wakes_a_sleeping_client  SIGTERM with an idle ring client: the daemon exits
 *                                    cleanly and the client's next query fails (ECLOSED or
 *                                    EIO) within 5 s; SIGKILL while a ring client sleeps for
 *                                    its reply (the daemon stopped with SIGSTOP first): the
 *                                    client wakes with ECLOSED or EIO within 5 s
 *   sizes_are_rounded_and_clamped    --max-ring-bytes 131072: RingOpen's bytes rounded up to a
 *                                    power of two and clamped to [64 KiB, 128 KiB] (0: 256 KiB
 *                                    clamped), the mapping sized and its header set to match
 *   idle_rings_are_parked            --ring-park-us 50000 beside a loop that polls: an idle
 *                                    ring's srv_sleep goes up, a request written without the
 *                                    doorbell is not taken, the doorbell brings it in; a
 *                                    libtandem client idle past it answered as before
 *   rings_have_a_memory_budget_of_their_own  --max-input-bytes 1M, --max-ring-memory 3M: 1 MiB
 *                                    rings open; a second pair is refused (BUSY, the limit
 *                                    named) and that client served on the socket, 64 KiB
 *                                    rings still fit; a 700 KiB frame from a third client is
 *                                    taken; the first client's close gives its room back
 *
 * Poses are drawn so that their quaternion is a fixed point of normalisation (as in
 * test_daemon.c): the server and the brute-force reference use the very same rotation, and
 * answers must agree exactly. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include "brute.h"
#include "check.h"
#include "daemon_util.h"
#include "gen.h"
#include "wire_pose.h"
#include "proto/shm_ring.h"

/* memfd seals (linux/fcntl.h), for a C library too old to name them */
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

static uint64_t seed;
static dmn D;

static void suite_init(void)
{
    seed = gen_seed(0x5e1f21ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    dmn_init(&D, "ring");
}

static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(ring, .init = suite_init, .fini = suite_fini, .timeout = 60);

/* ---- shared helpers ------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* io_timeout_ms 0: none (a hang then shows as one, not as TDM_CLIENT_ETIMEOUT). */
static tdm_client *lib_connect(const char *addr, int io_timeout_ms)
{
    tdm_connect_opts o = {.addr = addr, .timeout_ms = 5000, .io_timeout_ms = io_timeout_ms, .client_name = "test_ring"};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert_not_null(c);
    cr_assert_eq(tdm_client_err(c), 0, "connecting to %s: %s", addr, tdm_client_errstr(c));
    cr_assert_eq(tdm_client_ring_open(c), 0, "a fresh client says its rings are open");
    return c;
}

/* A client whose frames go through rings of `bytes` (0: the server's default). */
static tdm_client *lib_ring(const char *addr, uint32_t bytes, int spin_us, int io_timeout_ms)
{
    tdm_client *c = lib_connect(addr, io_timeout_ms);
    int rc = tdm_client_ring(c, bytes, spin_us);
    cr_assert_eq(rc, 0, "tdm_client_ring(%u, %d) on %s: %d (%s)", bytes, spin_us, addr, rc, tdm_client_errstr(c));
    cr_assert_eq(tdm_client_ring_open(c), 1, "tdm_client_ring succeeded but tdm_client_ring_open says 0");
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    return c;
}

static void put_mesh(tdm_client *c, const char *name, const tdm_mesh *m, uint8_t id[32], int want_created,
                     const char *what)
{
    int created = -1;
    int rc = tdm_mesh_put(c, name, m->verts, m->n_verts, m->tris, m->n_tris, id, &created);
    cr_assert_eq(rc, 0, "%s: MeshPut %s (%u triangles): %d %s", what, name, m->n_tris, rc, tdm_client_errstr(c));
    uint8_t want[32];
    canon_mesh_id(m->verts, m->n_verts, m->tris, m->n_tris, want);
    char a[TDM_ID_HEX], b[TDM_ID_HEX];
    cr_assert(!memcmp(id, want, 32), "%s: mesh %s: server id %s, the README's canonical SHA-256 is %s", what, name,
              tdm_id_to_hex(id, a), tdm_id_to_hex(want, b));
    if (want_created >= 0)
        cr_assert_eq(created, want_created, "%s: mesh %s: created=%d, expected %d", what, name, created, want_created);
}

/* Stores env and robot, then the scene {0: env fixed at the identity, 1: robot movable};
 * checks every id against the README's. want_created < 0: not checked. */
static void put_scene_of(tdm_client *c, const tdm_mesh *env, const tdm_mesh *robot, uint8_t sid[32], int want_created,
                         const char *what)
{
    uint8_t env_id[32], robot_id[32];
    put_mesh(c, "env", env, env_id, want_created, what);
    put_mesh(c, "robot", robot, robot_id, want_created, what);
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, 32);
    memcpy(objs[1].mesh_id, robot_id, 32);
    uint32_t movable[2] = {99, 99};
    size_t n_movable = 0;
    int created = -1;
    int rc = tdm_scene_put(c, "scene", objs, 2, NULL, 0, sid, &created, movable, 2, &n_movable);
    cr_assert_eq(rc, 0, "%s: ScenePut: %d %s", what, rc, tdm_client_errstr(c));
    if (want_created >= 0)
        cr_assert_eq(created, want_created, "%s: scene created=%d, expected %d", what, created, want_created);
    cr_assert(n_movable == 1 && movable[0] == 1, "%s: %zu movable objects (first %u), expected just object 1", what,
              n_movable, movable[0]);
    canon_object co[2] = {{.id = 0, .movable = 0, .pose = {0, 0, 0, 0, 0, 0, 1}}, {.id = 1, .movable = 1}};
    memcpy(co[0].mesh_id, env_id, 32);
    memcpy(co[1].mesh_id, robot_id, 32);
    uint8_t want[32];
    canon_scene_id(co, 2, NULL, 0, want);
    cr_assert(!memcmp(want, sid, 32), "%s: the scene id is not the README's canonical SHA-256", what);
}

#define RES_FMT "colliding=%u contacts=%u truncated=%u pair (%u, %u) n_pairs=%u"
#define RES_ARGS(r) (r).colliding, (r).contacts, (r).truncated, (r).object_a, (r).object_b, (r).n_pairs

static int same_result(const tdm_query_result *a, const tdm_query_result *b)
{
    return a->colliding == b->colliding && a->contacts == b->contacts && a->truncated == b->truncated &&
           a->object_a == b->object_a && a->object_b == b->object_b && a->n_pairs == b->n_pairs;
}

static int cmp_contact(const void *x, const void *y)
{
    const tdm_contact *a = x, *b = y;
    if (a->triangle_a != b->triangle_a) return a->triangle_a < b->triangle_a ? -1 : 1;
    return a->triangle_b < b->triangle_b ? -1 : a->triangle_b > b->triangle_b;
}

/* Polls c's stats (5 s at most) until `want` connections are open; returns the last count. */
static uint32_t connections_settle(tdm_client *c, uint32_t want)
{
    tdm_stats st;
    double t0 = now_s();
    for (;;) {
        int rc = tdm_stats_get(c, &st);
        cr_assert_eq(rc, 0, "stats: %d %s", rc, tdm_client_errstr(c));
        if (st.connections == want || now_s() - t0 > 5) return st.connections;
        sleep_us(10000);
    }
}

/* ---- a scene with brute-force answers (oracle) -------------------------------------------- */

typedef struct oracle {
    tdm_mesh *env, *robot; /* owned */
    size_t n;
    double *wire;          /* 7 per pose */
    size_t *npairs;        /* brute force, per pose */
    tdm_pair **pairs;      /* brute force, per pose, sorted by (env triangle, robot triangle) */
    size_t colliding;
} oracle;

static void oracle_make(oracle *o, tdm_mesh *env, tdm_mesh *robot, double radius, size_t n, uint64_t sd)
{
    cr_assert(env && robot);
    gen_rng r = {sd};
    o->env = env;
    o->robot = robot;
    o->n = n;
    o->wire = malloc(sizeof *o->wire * 7 * n);
    o->npairs = malloc(sizeof *o->npairs * n);
    o->pairs = malloc(sizeof *o->pairs * n);
    cr_assert(o->wire && o->npairs && o->pairs);
    o->colliding = 0;
    brute bf;
    cr_assert_eq(brute_init(&bf, env, robot), 0);
    for (size_t i = 0; i < n; i++) {
        gen_pose p = wire_stable_pose(&r, tdm_d3(0, 0, 0), radius);
        wire_pose(&p, o->wire + 7 * i);
        tdm_xform x = wire_xform(o->wire + 7 * i);
        size_t k = brute_run(&bf, &x);
        cr_assert(k != (size_t)-1);
        o->npairs[i] = k;
        o->pairs[i] = malloc(sizeof(tdm_pair) * (k ? k : 1));
        cr_assert_not_null(o->pairs[i]);
        if (k) memcpy(o->pairs[i], bf.pairs, sizeof(tdm_pair) * k);
        o->colliding += k > 0;
    }
    brute_free(&bf);
    cr_log_info("%zu poses, %zu colliding", n, o->colliding);
    cr_assert(o->colliding > n / 10 && o->colliding < 9 * n / 10,
              "the scene should mix colliding and free poses (%zu of %zu collide)", o->colliding, n);
}

static void oracle_free(oracle *o)
{
    for (size_t i = 0; i < o->n; i++) free(o->pairs[i]);
    free(o->pairs);
    free(o->npairs);
    free(o->wire);
    tdm_mesh_free(o->env);
    tdm_mesh_free(o->robot);
}

/* Answers for poses first..first+k of o in `mode` (no cap) against brute force. */
static void oracle_check(const oracle *o, size_t first, size_t k, int mode, const tdm_query_result *res,
                         const char *what)
{
    for (size_t i = 0; i < k; i++) {
        size_t p = o->npairs[first + i];
        uint32_t want = mode == TDM_QUERY_BOOL ? (uint32_t)(p > 0) : (uint32_t)p;
        const tdm_query_result *q = &res[i];
        CHECK(q->colliding == (p > 0) && q->contacts == want && q->truncated == 0,
              "%s, %s, pose %zu: colliding=%u contacts=%u truncated=%u; brute force: %zu pairs", what,
              mode ? "contacts" : "bool", first + i, q->colliding, q->contacts, q->truncated, p);
        if (p > 0)
            CHECK(q->object_a == 0 && q->object_b == 1, "%s, %s, pose %zu: colliding pair (%u, %u), expected (0, 1)",
                  what, mode ? "contacts" : "bool", first + i, q->object_a, q->object_b);
    }
}

/* want_pairs answers for poses 0..np-1: exactly the pairs brute force finds. */
static void oracle_pairs_check(const oracle *o, size_t np, const tdm_query_result *res, tdm_pairs *pairs,
                               const char *what)
{
    size_t total = 0;
    for (size_t i = 0; i < np; i++) total += o->npairs[i];
    cr_assert_eq(pairs->count, total, "%s: %zu pairs sent back, brute force finds %zu", what, pairs->count, total);
    for (size_t i = 0; i < np; i++) {
        cr_assert_eq(res[i].n_pairs, o->npairs[i], "%s: pose %zu: %u pairs, brute force %zu", what, i, res[i].n_pairs,
                     o->npairs[i]);
        cr_assert(res[i].first_pair + res[i].n_pairs <= pairs->count, "%s: pose %zu: pairs %llu..+%u past the %zu sent",
                  what, i, (unsigned long long)res[i].first_pair, res[i].n_pairs, pairs->count);
        tdm_contact *ct = pairs->data + res[i].first_pair;
        qsort(ct, res[i].n_pairs, sizeof *ct, cmp_contact);
        for (uint32_t k = 0; k < res[i].n_pairs; k++)
            CHECK(ct[k].object_a == 0 && ct[k].object_b == 1 && ct[k].triangle_a == o->pairs[i][k].a_tri &&
                      ct[k].triangle_b == o->pairs[i][k].b_tri,
                  "%s: pose %zu pair %u: (%u:%u, %u:%u), brute force (0:%u, 1:%u)", what, i, k, ct[k].object_a,
                  ct[k].triangle_a, ct[k].object_b, ct[k].triangle_b, o->pairs[i][k].a_tri, o->pairs[i][k].b_tri);
    }
}

/* ---- a small scene for tests about something else: a box, a sphere, four fixed poses ---- */

enum { SMALL_N = 4 };

typedef struct small {
    tdm_mesh *env, *robot;
    double wire[SMALL_N * 7];
    size_t pairs[SMALL_N]; /* brute force */
} small;

/* Identity rotations; poses 0 and 2 cross a face of the box (x = 1, then y = 1), 1 and 3 are
 * clear of it. Off-centre, so that no vertex lies on a face. */
static const double small_at[SMALL_N][3] = {
    {1.1234, 0.0371, -0.0593}, {5.0, 0.3, 0.2}, {0.0217, 0.9531, 0.0413}, {0.1, 0.2, -4.0}};

static void small_make(small *s)
{
    s->env = gen_box(1, 1, 1);
    s->robot = gen_sphere(0.5, 16);
    cr_assert(s->env && s->robot);
    brute bf;
    cr_assert_eq(brute_init(&bf, s->env, s->robot), 0);
    for (int i = 0; i < SMALL_N; i++) {
        double *w = s->wire + 7 * i;
        w[0] = small_at[i][0];
        w[1] = small_at[i][1];
        w[2] = small_at[i][2];
        w[3] = w[4] = w[5] = 0;
        w[6] = 1;
        tdm_xform x = wire_xform(w);
        s->pairs[i] = brute_run(&bf, &x);
        cr_assert(s->pairs[i] != (size_t)-1);
    }
    brute_free(&bf);
    cr_assert(s->pairs[0] > 0 && s->pairs[1] == 0 && s->pairs[2] > 0 && s->pairs[3] == 0,
              "the small scene's poses: brute force finds %zu %zu %zu %zu pairs", s->pairs[0], s->pairs[1],
              s->pairs[2], s->pairs[3]);
}

static void small_free(small *s)
{
    tdm_mesh_free(s->env);
    tdm_mesh_free(s->robot);
}

static void small_put(const small *s, tdm_client *c, uint8_t sid[32], const char *what)
{
    put_scene_of(c, s->env, s->robot, sid, -1, what);
}

static void small_expect(const small *s, int mode, const tdm_query_result *res, const char *what)
{
    for (int i = 0; i < SMALL_N; i++) {
        size_t p = s->pairs[i];
        uint32_t want = mode == TDM_QUERY_BOOL ? (uint32_t)(p > 0) : (uint32_t)p;
        cr_assert(res[i].colliding == (p > 0) && res[i].contacts == want && res[i].truncated == 0 &&
                      (p == 0 || (res[i].object_a == 0 && res[i].object_b == 1)),
                  "%s, %s, pose %d: " RES_FMT "; brute force: %zu pairs", what, mode ? "contacts" : "bool", i,
                  RES_ARGS(res[i]), p);
    }
}

/* Both modes through c: the right answers. */
static void small_check(const small *s, tdm_client *c, const uint8_t sid[32], const char *what)
{
    for (int mode = 0; mode < 2; mode++) {
        tdm_query_result res[SMALL_N];
        memset(res, 0xee, sizeof res);
        int rc = tdm_query(c, sid, (tdm_query_mode)mode, s->wire, 1, SMALL_N, 0, res, NULL);
        cr_assert_eq(rc, 0, "%s: query (%s): %d %s", what, mode ? "contacts" : "bool", rc, tdm_client_errstr(c));
        small_expect(s, mode, res, what);
    }
}

/* ---- raw requests ------------------------------------------------------------------------ */

static Tandem__V1__Request stats_req(uint64_t id, Tandem__V1__StatsRequest *st)
{
    Tandem__V1__StatsRequest z = TANDEM__V1__STATS_REQUEST__INIT;
    *st = z;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_STATS;
    rq.stats = st;
    return rq;
}

static Tandem__V1__Request ring_open_req(uint64_t id, uint32_t bytes, Tandem__V1__RingOpen *ro)
{
    Tandem__V1__RingOpen z = TANDEM__V1__RING_OPEN__INIT;
    *ro = z;
    ro->bytes = bytes;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_RING_OPEN;
    rq.ring_open = ro;
    return rq;
}

/* A frame (length prefix and body) of rq, malloc'd; *n its size. */
static uint8_t *frame_of(const Tandem__V1__Request *rq, size_t *n)
{
    size_t len;
    uint8_t *body = raw_pack(rq, &len);
    cr_assert_not_null(body);
    uint8_t *f = malloc(4 + len);
    cr_assert_not_null(f);
    put_be32(f, (uint32_t)len);
    memcpy(f + 4, body, len);
    free(body);
    *n = 4 + len;
    return f;
}

/* Hello on fd; returns HelloReply.limits.max_ring_bytes. */
static uint32_t hello_max_ring(int fd, uint64_t id)
{
    Tandem__V1__Reply *r = raw_hello_reply_or_fail(fd, id);
    cr_assert_not_null(r->hello->limits, "a HelloReply without limits");
    uint32_t v = r->hello->limits->max_ring_bytes;
    tandem__v1__reply__free_unpacked(r, NULL);
    return v;
}

/* ---- a raw ring client -------------------------------------------------------------------- */

typedef struct rring {
    int fd;           /* the socket */
    int memfd;
    uint8_t *map;
    size_t map_bytes;
    tdm_ring_header *h;
    uint32_t cap;
} rring;

/* Sends RingOpen{bytes: want} (id) on fd, past its Hello, and maps what comes. Asserts the
 * reply (on the socket, with exactly one descriptor), the memfd's size and seals, and a fresh
 * header. Returns the rings' size. */
static uint32_t ring_open_on(rring *r, int fd, uint32_t want, uint64_t id)
{
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->memfd = -1;
    Tandem__V1__RingOpen ro;
    Tandem__V1__Request rq = ring_open_req(id, want, &ro);
    cr_assert_eq(raw_send(fd, &rq), 0, "sending RingOpen(%u): %s", want, strerror(errno));
    Tandem__V1__Reply *rep = NULL;
    int memfd = -1, n_fds = 0;
    char err[256] = "";
    int rc = raw_recv_fds(fd, 10000, &rep, &memfd, &n_fds, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "RingOpen(%u): no reply: %s", want,
                 rc == RAW_EOF ? "the server closed the connection" : err);
    cr_assert_eq(rep->id, id, "RingOpen(%u): reply id %llu, expected %llu", want, (unsigned long long)rep->id,
                 (unsigned long long)id);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_RING_OPEN, "RingOpen(%u) answered with body %d%s%s", want,
                 (int)rep->body_case, rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? ": " : "",
                 rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? rep->error->message : "");
    cr_assert_eq(n_fds, 1, "RingOpen(%u): the reply came with %d descriptors, expected exactly 1", want, n_fds);
    uint32_t cap = rep->ring_open->bytes;
    tandem__v1__reply__free_unpacked(rep, NULL);
    cr_assert(cap >= TDM_RING_MIN_BYTES && (cap & (cap - 1)) == 0,
              "RingOpen(%u): rings of %u bytes, not a power of two of at least 64 KiB", want, cap);
    r->memfd = memfd;
    r->cap = cap;
    r->map_bytes = tdm_ring_map_bytes(cap);

    struct stat st;
    cr_assert_eq(fstat(memfd, &st), 0, "fstat of the ring's descriptor: %s", strerror(errno));
    cr_assert(S_ISREG(st.st_mode), "the ring's descriptor is not a memfd (mode %o)", (unsigned)st.st_mode);
    cr_assert_eq((unsigned long long)st.st_size, (unsigned long long)r->map_bytes,
                 "the memfd holds %lld bytes; rings of %u bytes need tdm_ring_map_bytes = %zu", (long long)st.st_size,
                 cap, r->map_bytes);
    int seals = fcntl(memfd, F_GET_SEALS);
    cr_assert(seals >= 0, "F_GET_SEALS on the ring's descriptor: %s", strerror(errno));
    int want_seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    cr_assert_eq(seals & want_seals, want_seals, "the memfd's seals are %#x: shrink, grow and seal (%#x) are wanted",
                 seals, want_seals);
    cr_assert_eq(seals & F_SEAL_WRITE, 0, "the memfd is sealed against writes (%#x): the client must write its ring",
                 seals);

    void *m = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    cr_assert(m != MAP_FAILED, "mmap of the ring's %zu bytes: %s", r->map_bytes, strerror(errno));
    r->map = m;
    r->h = m;
    tdm_ring_header *h = r->h;
    cr_assert_eq(h->magic, TDM_RING_MAGIC, "ring header magic %#x, expected %#x", h->magic, TDM_RING_MAGIC);
    cr_assert_eq(h->version, TDM_RING_VERSION, "ring header version %u", h->version);
    cr_assert_eq(h->cap, cap, "ring header cap %u, the reply said %u", h->cap, cap);
    cr_assert_eq(atomic_load(&h->closed), 0u, "a fresh ring says closed");
    uint64_t rqh = atomic_load(&h->req_head), rqt = atomic_load(&h->req_tail), rph = atomic_load(&h->rep_head),
             rpt = atomic_load(&h->rep_tail);
    cr_assert(rqh == 0 && rqt == 0 && rph == 0 && rpt == 0,
              "a fresh ring's indices: req %llu/%llu rep %llu/%llu, expected all 0", (unsigned long long)rqh,
              (unsigned long long)rqt, (unsigned long long)rph, (unsigned long long)rpt);
    return cap;
}

/* Connects to addr, says Hello, and opens rings as ring_open_on. */
static uint32_t ring_open_raw(rring *r, const char *addr, uint32_t want, uint64_t id)
{
    int fd = raw_connect(addr);
    cr_assert(fd >= 0, "connect %s: %s", addr, strerror(errno));
    raw_hello_or_fail(fd, id + 1000);
    return ring_open_on(r, fd, want, id);
}

/* Socket closed first, then the mapping (unmap_first: the other way round). */
static void ring_close(rring *r, int unmap_first)
{
    if (unmap_first) {
        if (r->map) munmap(r->map, r->map_bytes);
        if (r->memfd >= 0) close(r->memfd);
        if (r->fd >= 0) close(r->fd);
    } else {
        if (r->fd >= 0) close(r->fd);
        if (r->map) munmap(r->map, r->map_bytes);
        if (r->memfd >= 0) close(r->memfd);
    }
    r->map = NULL;
    r->h = NULL;
    r->fd = r->memfd = -1;
}

/* The doorbell: after publishing (a full fence), one byte on the socket if the server may sleep. */
static void ring_bell(rring *r)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&r->h->srv_sleep, memory_order_relaxed)) {
        static const uint8_t bell = 0x62;
        (void)raw_write_all(r->fd, &bell, 1); /* a server that closed is seen later */
    }
}

/* Writes n bytes into the request ring as room comes (5 s at most), storing req_head and
 * ringing the doorbell after each piece. 0, or -1 (no room in time, broken indices, closed). */
static int ring_put(rring *r, const void *p, size_t n)
{
    tdm_ring_header *h = r->h;
    const uint8_t *b = p;
    double deadline = now_s() + 5;
    while (n > 0) {
        uint64_t head = atomic_load_explicit(&h->req_head, memory_order_relaxed); /* ours */
        uint64_t tail = atomic_load_explicit(&h->req_tail, memory_order_acquire);
        if (head - tail > r->cap) return -1;
        uint64_t room = r->cap - (head - tail);
        if (room == 0) {
            if (atomic_load_explicit(&h->closed, memory_order_acquire) || now_s() > deadline) return -1;
            sleep_us(100);
            continue;
        }
        size_t k = n < room ? n : (size_t)room;
        tdm_ring_copy_in(tdm_ring_req_data(r->map), r->cap, head, b, k);
        atomic_store_explicit(&h->req_head, head + k, memory_order_release);
        ring_bell(r);
        b += k;
        n -= k;
    }
    return 0;
}

static void ring_send_or_fail(rring *r, const Tandem__V1__Request *rq)
{
    size_t n;
    uint8_t *f = frame_of(rq, &n);
    cr_assert_eq(ring_put(r, f, n), 0, "request %llu (body %d, %zu bytes): the request ring took it not within 5 s",
                 (unsigned long long)rq->id, (int)rq->body_case, n);
    free(f);
}

/* Takes n bytes of the reply stream as they come, storing rep_tail (and ringing the doorbell
 * when the server waits for room). RAW_REPLY once all came; RAW_EOF when the server closed
 * (`closed`) with none of them there; RAW_ERROR when it closed part way or its index is out of
 * bounds; RAW_TIMEOUT past the deadline. */
static int ring_take(rring *r, uint8_t *dst, size_t n, double deadline, char *err, size_t errlen)
{
    tdm_ring_header *h = r->h;
    size_t got = 0;
    while (got < n) {
        uint64_t tail = atomic_load_explicit(&h->rep_tail, memory_order_relaxed); /* ours */
        uint64_t head = atomic_load_explicit(&h->rep_head, memory_order_acquire);
        if (head - tail > r->cap) {
            snprintf(err, errlen, "rep_head %llu is out of bounds (rep_tail %llu, rings of %u bytes)",
                     (unsigned long long)head, (unsigned long long)tail, r->cap);
            return RAW_ERROR;
        }
        if (head == tail) {
            if (atomic_load_explicit(&h->closed, memory_order_acquire)) {
                if (atomic_load_explicit(&h->rep_head, memory_order_acquire) != tail) continue;
                if (got == 0) return RAW_EOF;
                snprintf(err, errlen, "the server closed the rings after %zu of %zu bytes", got, n);
                return RAW_ERROR;
            }
            if (now_s() > deadline) {
                snprintf(err, errlen, "%zu of %zu bytes in the reply ring before the deadline", got, n);
                return RAW_TIMEOUT;
            }
            sleep_us(100);
            continue;
        }
        size_t k = head - tail < n - got ? (size_t)(head - tail) : n - got;
        tdm_ring_copy_out(tdm_ring_rep_data(r->map, r->cap), r->cap, tail, dst + got, k);
        atomic_store_explicit(&h->rep_tail, tail + k, memory_order_release);
        got += k;
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&h->srv_space, memory_order_relaxed)) ring_bell(r);
    }
    return RAW_REPLY;
}

/* raw_recv through the reply ring: one frame within timeout_ms. */
static int ring_get(rring *r, int timeout_ms, Tandem__V1__Reply **out, char *err, size_t errlen)
{
    double deadline = now_s() + timeout_ms / 1000.0;
    uint8_t hdr[4];
    int rc = ring_take(r, hdr, 4, deadline, err, errlen);
    if (rc != RAW_REPLY) return rc;
    uint32_t len = be32(hdr);
    if (len == 0 || len > (256u << 20)) {
        snprintf(err, errlen, "reply frame length %u in the reply ring", len);
        return RAW_ERROR;
    }
    uint8_t *body = malloc(len);
    cr_assert_not_null(body);
    rc = ring_take(r, body, len, deadline, err, errlen);
    if (rc != RAW_REPLY) {
        free(body);
        if (rc == RAW_EOF) {
            snprintf(err, errlen, "the server closed the rings inside a reply of %u bytes", len);
            rc = RAW_ERROR;
        }
        return rc;
    }
    return raw_unpack(body, len, out, err, errlen);
}

/* Sends rq through the rings and reads one reply with its id (10 s). */
static Tandem__V1__Reply *ring_call_or_fail(rring *r, const Tandem__V1__Request *rq)
{
    ring_send_or_fail(r, rq);
    Tandem__V1__Reply *rep = NULL;
    char err[256] = "";
    int rc = ring_get(r, 10000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "request %llu (body %d) through the rings: no reply: %s", (unsigned long long)rq->id,
                 (int)rq->body_case, rc == RAW_EOF ? "the server closed the rings" : err);
    cr_assert_eq(rep->id, rq->id, "reply id %llu to request %llu", (unsigned long long)rep->id,
                 (unsigned long long)rq->id);
    return rep;
}

/* A StatsRequest through the rings: a StatsReply with `connections` connections open
 * (UINT32_MAX: not checked). */
static void ring_stats_or_fail(rring *r, uint64_t id, uint32_t connections, const char *what)
{
    Tandem__V1__StatsRequest sr;
    Tandem__V1__Request rq = stats_req(id, &sr);
    Tandem__V1__Reply *rep = ring_call_or_fail(r, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_STATS, "%s: StatsRequest answered with body %d%s%s", what,
                 (int)rep->body_case, rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? ": " : "",
                 rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? rep->error->message : "");
    if (connections != UINT32_MAX)
        cr_assert_eq(rep->stats->connections, connections, "%s: stats say %u connections, expected %u", what,
                     rep->stats->connections, connections);
    tandem__v1__reply__free_unpacked(rep, NULL);
}

/* Waits (timeout_ms at most) until the server has taken every request byte written. */
static void ring_wait_taken(rring *r, int timeout_ms, const char *what)
{
    double t0 = now_s();
    uint64_t head = atomic_load(&r->h->req_head), tail;
    while ((tail = atomic_load(&r->h->req_tail)) != head && now_s() - t0 < timeout_ms / 1000.0) sleep_us(1000);
    cr_assert_eq(tail, head, "%s: req_tail %llu, req_head %llu: the server has not taken every request byte", what,
                 (unsigned long long)tail, (unsigned long long)head);
}

/* ==== 1. the same answers as the socket and brute force =================================== */

Test(ring, answers_match_the_socket)
{
    oracle o;
    oracle_make(&o, gen_torus(1.5, 0.5, 32, 16), gen_sphere(0.6, 16), 2.3, 500, seed);
    dmn_start(&D, NULL);
    tdm_client *plain = lib_connect(D.unix_addr, 30000);
    tdm_client *ring = lib_ring(D.unix_addr, 0, 0, 30000);
    cr_assert_eq(tdm_client_ring_open(plain), 0, "the plain client's rings are open too");

    /* stored through the ring first (created), then the same content over the socket */
    uint8_t sid_ring[32], sid_plain[32];
    put_scene_of(ring, o.env, o.robot, sid_ring, 1, "through the ring");
    put_scene_of(plain, o.env, o.robot, sid_plain, 0, "over the socket");
    cr_assert(!memcmp(sid_ring, sid_plain, 32), "the same scene got two ids");

    size_t n = o.n;
    tdm_query_result *rr[2], *pr[2], *rb = calloc(n, sizeof *rb);
    cr_assert_not_null(rb);
    for (int mode = 0; mode < 2; mode++) {
        rr[mode] = calloc(n, sizeof *rr[mode]);
        pr[mode] = calloc(n, sizeof *pr[mode]);
        cr_assert(rr[mode] && pr[mode]);
        /* the ring client one pose a call (what rings are for: many small round trips), the
           plain one in batches of 100 */
        for (size_t i = 0; i < n; i++) {
            int rc = tdm_query(ring, sid_ring, (tdm_query_mode)mode, o.wire + 7 * i, 1, 1, 0, &rr[mode][i], NULL);
            CHECK(rc == 0, "ring, %s, pose %zu: %d %s", mode ? "contacts" : "bool", i, rc, tdm_client_errstr(ring));
        }
        for (size_t lo = 0; lo < n; lo += 100) {
            size_t k = n - lo < 100 ? n - lo : 100;
            int rc = tdm_query(plain, sid_plain, (tdm_query_mode)mode, o.wire + 7 * lo, 1, k, 0, pr[mode] + lo, NULL);
            cr_assert_eq(rc, 0, "socket, %s, poses %zu..: %d %s", mode ? "contacts" : "bool", lo, rc,
                         tdm_client_errstr(plain));
        }
        for (size_t i = 0; i < n; i++)
            CHECK(same_result(&rr[mode][i], &pr[mode][i]), "%s, pose %zu: ring " RES_FMT ", socket " RES_FMT,
                  mode ? "contacts" : "bool", i, RES_ARGS(rr[mode][i]), RES_ARGS(pr[mode][i]));
        oracle_check(&o, 0, n, mode, rr[mode], "ring");
        oracle_check(&o, 0, n, mode, pr[mode], "socket");
    }

    /* the whole set in one request through the ring */
    int rc = tdm_query(ring, sid_ring, TDM_QUERY_BOOL, o.wire, 1, n, 0, rb, NULL);
    cr_assert_eq(rc, 0, "ring, one batch of %zu: %d %s", n, rc, tdm_client_errstr(ring));
    for (size_t i = 0; i < n; i++)
        CHECK(same_result(&rb[i], &pr[0][i]), "bool, one batch, pose %zu: ring " RES_FMT ", socket " RES_FMT, i,
              RES_ARGS(rb[i]), RES_ARGS(pr[0][i]));

    /* want_pairs: the very pairs brute force finds, through both */
    const size_t np = 40;
    size_t total = 0;
    for (size_t i = 0; i < np; i++) total += o.npairs[i];
    tdm_query_result wr[40], wp[40];
    tdm_pairs pairs_r = {.data = malloc(sizeof(tdm_contact) * (total + 1)), .cap = total + 1};
    tdm_pairs pairs_p = {.data = malloc(sizeof(tdm_contact) * (total + 1)), .cap = total + 1};
    cr_assert(pairs_r.data && pairs_p.data);
    rc = tdm_query(ring, sid_ring, TDM_QUERY_CONTACTS, o.wire, 1, np, 20000, wr, &pairs_r);
    cr_assert_eq(rc, 0, "ring, want_pairs: %d %s", rc, tdm_client_errstr(ring));
    rc = tdm_query(plain, sid_plain, TDM_QUERY_CONTACTS, o.wire, 1, np, 20000, wp, &pairs_p);
    cr_assert_eq(rc, 0, "socket, want_pairs: %d %s", rc, tdm_client_errstr(plain));
    for (size_t i = 0; i < np; i++)
        cr_assert(same_result(&wr[i], &wp[i]), "want_pairs, pose %zu: ring " RES_FMT ", socket " RES_FMT, i,
                  RES_ARGS(wr[i]), RES_ARGS(wp[i]));
    oracle_pairs_check(&o, np, wr, &pairs_r, "ring, want_pairs");
    oracle_pairs_check(&o, np, wp, &pairs_p, "socket, want_pairs");

    /* the server answered every query once: 3 n through the ring, 2 n over the socket, and
       the want_pairs batches; both connections are counted */
    tdm_stats st;
    rc = tdm_stats_get(ring, &st);
    cr_assert_eq(rc, 0, "stats through the ring: %d %s", rc, tdm_client_errstr(ring));
    cr_assert_eq(st.queries, (uint64_t)(5 * n + 2 * np), "stats: %llu queries answered, %zu were asked",
                 (unsigned long long)st.queries, 5 * n + 2 * np);
    cr_assert_eq(st.connections, 2, "stats: %u connections", st.connections);
    cr_assert_eq(st.meshes, 2, "stats: %u meshes", st.meshes);
    cr_assert_eq(st.scenes, 1, "stats: %u scenes", st.scenes);
    cr_assert_eq(tdm_client_ring_open(ring), 1);

    free(pairs_r.data);
    free(pairs_p.data);
    for (int mode = 0; mode < 2; mode++) {
        free(rr[mode]);
        free(pr[mode]);
    }
    free(rb);
    tdm_client_free(ring);
    tdm_client_free(plain);
    oracle_free(&o);
}

/* ==== 2. frames larger than the ring ====================================================== */

/* The size of a QueryReply carrying these answers, as protobuf-c packs it. */
static size_t reply_bytes(const tdm_query_result *res, size_t n)
{
    Tandem__V1__QueryResult *qr = calloc(n, sizeof *qr);
    Tandem__V1__QueryResult **pp = calloc(n, sizeof *pp);
    cr_assert(qr && pp);
    for (size_t i = 0; i < n; i++) {
        tandem__v1__query_result__init(&qr[i]);
        qr[i].colliding = res[i].colliding;
        qr[i].object_a = res[i].object_a;
        qr[i].object_b = res[i].object_b;
        qr[i].contacts = res[i].contacts;
        qr[i].truncated = res[i].truncated;
        pp[i] = &qr[i];
    }
    Tandem__V1__QueryReply q = TANDEM__V1__QUERY_REPLY__INIT;
    q.n_results = n;
    q.results = pp;
    Tandem__V1__Reply rep = TANDEM__V1__REPLY__INIT;
    rep.id = 1;
    rep.body_case = TANDEM__V1__REPLY__BODY_QUERY;
    rep.query = &q;
    size_t s = tandem__v1__reply__get_packed_size(&rep);
    free(pp);
    free(qr);
    return s;
}

Test(ring, frames_larger_than_the_ring)
{
    enum { NQ = 30000 };
    const uint32_t RING = 65536;
    gen_rng r = {seed ^ 0xb16f}; /* the poses */
    tdm_mesh *env = gen_torus(1.5, 0.5, 160, 64), *robot = gen_sphere(0.4, 12);
    cr_assert(env && robot);
    cr_assert_eq(env->n_tris, 20480u);
    double *wire = malloc(sizeof *wire * 7 * NQ);
    cr_assert_not_null(wire);
    for (size_t i = 0; i < NQ; i++) {
        gen_pose p = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&p, wire + 7 * i);
    }
    /* the MeshPut and the Query requests are each larger than the ring */
    size_t len = 0;
    cr_assert_eq(tdm_encode_mesh_put(NULL, 0, &len, 1, "env", env->verts, env->n_verts, env->tris, env->n_tris),
                 TDM_CLIENT_ENOBUFS);
    cr_assert(len > 2 * (size_t)RING, "the MeshPut frame is %zu bytes: it should be over twice the ring", len);
    uint8_t zero[32] = {0};
    cr_assert_eq(tdm_encode_query(NULL, 0, &len, 1, zero, TDM_QUERY_CONTACTS, wire, 1, NQ, 0, 0),
                 TDM_CLIENT_ENOBUFS);
    cr_assert(len > 16 * (size_t)RING, "the Query frame is %zu bytes: it should be over 16 rings", len);

    dmn_start(&D, NULL);
    tdm_client *ring = lib_ring(D.unix_addr, RING, 0, 60000);
    tdm_client *plain = lib_connect(D.unix_addr, 60000);
    uint8_t sid[32];
    put_scene_of(ring, env, robot, sid, 1, "through 64 KiB rings");

    /* a small reply after the large request */
    tdm_mesh_info *ml = NULL;
    size_t nm = 0;
    int rc = tdm_mesh_list(ring, &ml, &nm);
    cr_assert_eq(rc, 0, "MeshList through the ring: %d %s", rc, tdm_client_errstr(ring));
    cr_assert_eq(nm, 2, "%zu meshes listed, expected 2", nm);
    for (size_t i = 0; i < nm; i++) {
        int is_env = !strcmp(ml[i].name, "env");
        const tdm_mesh *m = is_env ? env : robot;
        cr_assert(is_env || !strcmp(ml[i].name, "robot"), "mesh %zu is named '%s'", i, ml[i].name);
        cr_assert(ml[i].n_vertices == m->n_verts && ml[i].n_triangles == m->n_tris && ml[i].scenes == 1,
                  "mesh %s: %u vertices %u triangles %u scenes, expected %u %u 1", ml[i].name, ml[i].n_vertices,
                  ml[i].n_triangles, ml[i].scenes, m->n_verts, m->n_tris);
    }
    tdm_mesh_list_free(ml);

    tdm_query_result *want = calloc(NQ, sizeof *want), *got = calloc(NQ, sizeof *got);
    tdm_query_result *gb = calloc(NQ, sizeof *gb), *gc = calloc(NQ, sizeof *gc);
    cr_assert(want && got && gb && gc);
    rc = tdm_query(plain, sid, TDM_QUERY_CONTACTS, wire, 1, NQ, 0, want, NULL);
    cr_assert_eq(rc, 0, "socket: %d %s", rc, tdm_client_errstr(plain));
    size_t colliding = 0;
    for (size_t i = 0; i < NQ; i++) colliding += want[i].colliding;
    cr_assert(colliding > NQ / 10 && colliding < 9 * NQ / 10, "%zu of %d poses collide: the answers should mix",
              colliding, NQ);
    size_t rbytes = reply_bytes(want, NQ);
    cr_assert(rbytes > RING, "the contacts reply is %zu bytes: it should be larger than the ring", rbytes);
    cr_log_info("%zu of %d poses collide; request %zu bytes, reply about %zu bytes, rings of %u", colliding, NQ, len,
                rbytes, RING);

    rc = tdm_query(ring, sid, TDM_QUERY_CONTACTS, wire, 1, NQ, 0, got, NULL);
    cr_assert_eq(rc, 0, "ring: %d %s", rc, tdm_client_errstr(ring));
    for (size_t i = 0; i < NQ; i++)
        CHECK(same_result(&got[i], &want[i]), "contacts, pose %zu: ring " RES_FMT ", socket " RES_FMT, i,
              RES_ARGS(got[i]), RES_ARGS(want[i]));

    /* two of them in flight at once: bool, then contacts */
    uint64_t id_b = 0, id_c = 0;
    rc = tdm_query_send(ring, sid, TDM_QUERY_BOOL, wire, 1, NQ, 0, gb, NULL, &id_b);
    cr_assert_eq(rc, 0, "send bool: %d %s", rc, tdm_client_errstr(ring));
    rc = tdm_query_send(ring, sid, TDM_QUERY_CONTACTS, wire, 1, NQ, 0, gc, NULL, &id_c);
    cr_assert_eq(rc, 0, "send contacts: %d %s", rc, tdm_client_errstr(ring));
    cr_assert_neq(id_b, id_c, "two queries in flight with one id");
    cr_assert_eq(tdm_query_outstanding(ring), 2);
    int seen_b = 0, seen_c = 0;
    for (int k = 0; k < 2; k++) {
        uint64_t id = 0;
        int status = -1;
        rc = tdm_query_wait(ring, &id, &status);
        cr_assert_eq(rc, 0, "wait %d: %d", k, rc);
        cr_assert_eq(status, 0, "query %llu: status %d %s", (unsigned long long)id, status, tdm_client_errstr(ring));
        cr_assert(id == id_b || id == id_c, "wait handed back id %llu, sent %llu and %llu", (unsigned long long)id,
                  (unsigned long long)id_b, (unsigned long long)id_c);
        if (id == id_b) seen_b++;
        else seen_c++;
    }
    cr_assert(seen_b == 1 && seen_c == 1, "handed back: bool %d times, contacts %d times", seen_b, seen_c);
    cr_assert_eq(tdm_query_outstanding(ring), 0);
    for (size_t i = 0; i < NQ; i++) {
        tdm_query_result b = want[i];
        b.contacts = b.colliding; /* bool mode: 1 when colliding; one object pair in the scene */
        CHECK(same_result(&gb[i], &b), "pipelined bool, pose %zu: ring " RES_FMT ", expected " RES_FMT, i,
              RES_ARGS(gb[i]), RES_ARGS(b));
        CHECK(same_result(&gc[i], &want[i]), "pipelined contacts, pose %zu: ring " RES_FMT ", socket " RES_FMT, i,
              RES_ARGS(gc[i]), RES_ARGS(want[i]));
    }
    cr_assert_eq(tdm_client_err(ring), 0);
    cr_assert_eq(tdm_client_ring_open(ring), 1);

    free(want);
    free(got);
    free(gb);
    free(gc);
    free(wire);
    tdm_client_free(ring);
    tdm_client_free(plain);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* ==== 3. pipelined through the ring ========================================================= */

enum { PIPE_POOL = 256, PIPE_SENDS = 64, PIPE_MAXK = 8 };

typedef struct pipe_slot {
    uint64_t id;
    int mode;
    size_t first, k;
    int seen;
    tdm_query_result res[PIPE_MAXK];
} pipe_slot;

Test(ring, pipelined_through_the_ring)
{
    oracle o;
    oracle_make(&o, gen_torus(1.5, 0.5, 24, 12), gen_sphere(0.5, 12), 2.3, PIPE_POOL, seed ^ 0x919e);
    dmn_start(&D, NULL);
    tdm_client *plain = lib_connect(D.unix_addr, 30000);
    tdm_client *ring = lib_ring(D.unix_addr, 0, 0, 30000);
    uint8_t sid[32], sid_p[32];
    put_scene_of(ring, o.env, o.robot, sid, 1, "through the ring");
    put_scene_of(plain, o.env, o.robot, sid_p, 0, "over the socket");

    /* the socket's answers for the whole pool, both modes */
    tdm_query_result *pool[2];
    for (int mode = 0; mode < 2; mode++) {
        pool[mode] = calloc(PIPE_POOL, sizeof *pool[mode]);
        cr_assert_not_null(pool[mode]);
        int rc = tdm_query(plain, sid_p, (tdm_query_mode)mode, o.wire, 1, PIPE_POOL, 0, pool[mode], NULL);
        cr_assert_eq(rc, 0, "socket: %d %s", rc, tdm_client_errstr(plain));
        oracle_check(&o, 0, PIPE_POOL, mode, pool[mode], "socket");
    }

    pipe_slot *s = calloc(PIPE_SENDS, sizeof *s);
    cr_assert_not_null(s);
    gen_rng r = {seed ^ 0x64};
    for (int j = 0; j < PIPE_SENDS; j++) {
        s[j].mode = (int)gen_int(&r, 0, 1);
        s[j].k = (size_t)gen_int(&r, 1, PIPE_MAXK);
        s[j].first = (size_t)gen_int(&r, 0, PIPE_POOL - (int64_t)s[j].k);
        memset(s[j].res, 0xee, sizeof s[j].res);
        int rc = tdm_query_send(ring, sid, (tdm_query_mode)s[j].mode, o.wire + 7 * s[j].first, 1, s[j].k, 0, s[j].res,
                                NULL, &s[j].id);
        cr_assert_eq(rc, 0, "send %d: %d %s", j, rc, tdm_client_errstr(ring));
    }
    cr_assert_eq(tdm_query_outstanding(ring), PIPE_SENDS, "%zu outstanding after %d sends",
                 tdm_query_outstanding(ring), PIPE_SENDS);
    for (int j = 0; j < PIPE_SENDS; j++)
        for (int i = 0; i < j; i++)
            cr_assert_neq(s[i].id, s[j].id, "sends %d and %d got the same id %llu", i, j, (unsigned long long)s[i].id);

    for (int w = 0; w < PIPE_SENDS; w++) {
        uint64_t id = 0;
        int status = -1;
        int rc = tdm_query_wait(ring, &id, &status);
        cr_assert_eq(rc, 0, "wait %d: %d", w, rc);
        cr_assert_eq(status, 0, "wait %d (id %llu): status %d %s", w, (unsigned long long)id, status,
                     tdm_client_errstr(ring));
        pipe_slot *q = NULL;
        for (int j = 0; j < PIPE_SENDS; j++)
            if (s[j].id == id) q = &s[j];
        cr_assert_not_null(q, "wait %d handed back id %llu, which no send had", w, (unsigned long long)id);
        cr_assert_eq(q->seen, 0, "id %llu handed back twice", (unsigned long long)id);
        q->seen = 1;
        for (size_t i = 0; i < q->k; i++)
            cr_assert(same_result(&q->res[i], &pool[q->mode][q->first + i]),
                      "id %llu, %s, pose %zu: ring " RES_FMT ", socket " RES_FMT, (unsigned long long)id,
                      q->mode ? "contacts" : "bool", q->first + i, RES_ARGS(q->res[i]),
                      RES_ARGS(pool[q->mode][q->first + i]));
        oracle_check(&o, q->first, q->k, q->mode, q->res, "ring, pipelined");
    }
    for (int j = 0; j < PIPE_SENDS; j++) cr_assert_eq(s[j].seen, 1, "send %d never handed back", j);
    cr_assert_eq(tdm_query_outstanding(ring), 0);
    uint64_t id;
    int status;
    cr_assert_eq(tdm_query_wait(ring, &id, &status), TDM_CLIENT_EINVAL, "a wait with nothing outstanding");

    /* and a blocking call after the pipeline */
    tdm_query_result one[8];
    int rc = tdm_query(ring, sid, TDM_QUERY_CONTACTS, o.wire + 7 * 100, 1, 8, 0, one, NULL);
    cr_assert_eq(rc, 0, "after the pipeline: %d %s", rc, tdm_client_errstr(ring));
    for (size_t i = 0; i < 8; i++)
        cr_assert(same_result(&one[i], &pool[1][100 + i]), "after the pipeline, pose %zu: ring " RES_FMT
                  ", socket " RES_FMT, 100 + i, RES_ARGS(one[i]), RES_ARGS(pool[1][100 + i]));

    free(s);
    free(pool[0]);
    free(pool[1]);
    tdm_client_free(ring);
    tdm_client_free(plain);
    oracle_free(&o);
}

/* ==== 4. a spinning client ================================================================== */

Test(ring, spin_client)
{
    oracle o;
    oracle_make(&o, gen_torus(1.5, 0.5, 24, 12), gen_sphere(0.5, 12), 2.3, 120, seed ^ 0x5b1);
    dmn_start(&D, NULL);
    tdm_client *plain = lib_connect(D.unix_addr, 30000);
    tdm_client *ring = lib_ring(D.unix_addr, 0, 50, 30000);
    uint8_t sid[32], sid_p[32];
    put_scene_of(ring, o.env, o.robot, sid, 1, "through a spinning ring client");
    put_scene_of(plain, o.env, o.robot, sid_p, 0, "over the socket");
    size_t n = o.n;
    tdm_query_result *rr = calloc(n, sizeof *rr), *pr = calloc(n, sizeof *pr);
    cr_assert(rr && pr);
    for (int mode = 0; mode < 2; mode++) {
        for (size_t i = 0; i < n; i++) {
            int rc = tdm_query(ring, sid, (tdm_query_mode)mode, o.wire + 7 * i, 1, 1, 0, &rr[i], NULL);
            CHECK(rc == 0, "spin, %s, pose %zu: %d %s", mode ? "contacts" : "bool", i, rc, tdm_client_errstr(ring));
        }
        int rc = tdm_query(plain, sid_p, (tdm_query_mode)mode, o.wire, 1, n, 0, pr, NULL);
        cr_assert_eq(rc, 0, "socket: %d %s", rc, tdm_client_errstr(plain));
        for (size_t i = 0; i < n; i++)
            CHECK(same_result(&rr[i], &pr[i]), "%s, pose %zu: spinning ring " RES_FMT ", socket " RES_FMT,
                  mode ? "contacts" : "bool", i, RES_ARGS(rr[i]), RES_ARGS(pr[i]));
        oracle_check(&o, 0, n, mode, rr, "spinning ring");
    }
    /* a few in flight, waited for while spinning */
    tdm_query_result pres[4][10];
    uint64_t ids[4];
    for (int j = 0; j < 4; j++) {
        int rc = tdm_query_send(ring, sid, TDM_QUERY_CONTACTS, o.wire + 7 * (10 * j), 1, 10, 0, pres[j], NULL, &ids[j]);
        cr_assert_eq(rc, 0, "send %d: %d %s", j, rc, tdm_client_errstr(ring));
    }
    int seen[4] = {0};
    for (int w = 0; w < 4; w++) {
        uint64_t id = 0;
        int status = -1;
        cr_assert_eq(tdm_query_wait(ring, &id, &status), 0);
        cr_assert_eq(status, 0, "id %llu: status %d", (unsigned long long)id, status);
        int j = 0;
        while (j < 4 && ids[j] != id) j++;
        cr_assert(j < 4 && !seen[j], "id %llu handed back %s", (unsigned long long)id, j < 4 ? "twice" : "unsent");
        seen[j] = 1;
        oracle_check(&o, 10 * (size_t)j, 10, TDM_QUERY_CONTACTS, pres[j], "spinning ring, pipelined");
    }
    free(rr);
    free(pr);
    tdm_client_free(ring);
    tdm_client_free(plain);
    oracle_free(&o);
}

/* ==== 5. refusals keep the connection ====================================================== */

/* tdm_client_ring refused by the server: ESERVER, the Error names ring_open, c goes on. */
static void expect_refused(tdm_client *c, const char *what)
{
    int rc = tdm_client_ring(c, 0, 0);
    cr_assert_eq(rc, TDM_CLIENT_ESERVER, "%s: tdm_client_ring returned %d (%s), expected TDM_CLIENT_ESERVER", what, rc,
                 tdm_client_errstr(c));
    const tdm_server_error *e = tdm_client_server_error(c);
    cr_assert_not_null(e, "%s: no server error after TDM_CLIENT_ESERVER", what);
    cr_assert_eq(e->code, TDM_SERVER_BAD_REQUEST, "%s: error code %d (%s), expected BAD_REQUEST", what, e->code,
                 e->message);
    cr_assert_str_eq(e->field, "ring_open", "%s: error field '%s' (%s), expected 'ring_open'", what, e->field,
                     e->message);
    cr_assert_eq(tdm_client_ring_open(c), 0, "%s: refused, yet the rings say open", what);
    cr_assert_eq(tdm_client_err(c), 0, "%s: the refusal broke the connection: %s", what, tdm_client_errstr(c));
}

static Tandem__V1__Reply *recv_or_fail(int fd, const char *what)
{
    Tandem__V1__Reply *rep = NULL;
    char err[256] = "";
    int rc = raw_recv(fd, 10000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "%s: no reply on the socket: %s", what,
                 rc == RAW_EOF ? "the server closed the connection" : err);
    return rep;
}

Test(ring, refusals_keep_the_connection)
{
    small s;
    small_make(&s);
    dmn_start(&D, NULL);

    /* the limit is in HelloReply: 4 MiB by default */
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0, "connect: %s", strerror(errno));
    uint32_t mr = hello_max_ring(fd, 1);
    cr_assert_eq(mr, 4u << 20, "HelloReply.limits.max_ring_bytes %u, expected 4 MiB by default", mr);

    /* (a) a TCP connection: refused, then served as before */
    tdm_client *t = lib_connect(D.tcp_addr, 30000);
    uint8_t sid[32];
    small_put(&s, t, sid, "TCP");
    expect_refused(t, "a TCP connection");
    small_check(&s, t, sid, "the TCP client after its refusal");

    /* (c) a Unix client: EINVAL with a query in flight (the query then answered), rings after
       it, EINVAL for a second tdm_client_ring; served through the rings all along */
    tdm_client *u = lib_connect(D.unix_addr, 30000);
    tdm_query_result qr[SMALL_N];
    uint64_t qid = 0;
    int rc = tdm_query_send(u, sid, TDM_QUERY_BOOL, s.wire, 1, SMALL_N, 0, qr, NULL, &qid);
    cr_assert_eq(rc, 0, "send: %d %s", rc, tdm_client_errstr(u));
    rc = tdm_client_ring(u, 0, 0);
    cr_assert_eq(rc, TDM_CLIENT_EINVAL, "tdm_client_ring with a query in flight returned %d, expected EINVAL", rc);
    cr_assert_eq(tdm_client_ring_open(u), 0);
    cr_assert_eq(tdm_client_err(u), 0, "%s", tdm_client_errstr(u));
    uint64_t id = 0;
    int status = -1;
    cr_assert_eq(tdm_query_wait(u, &id, &status), 0);
    cr_assert(id == qid && status == 0, "the query in flight: id %llu (sent %llu), status %d", (unsigned long long)id,
              (unsigned long long)qid, status);
    small_expect(&s, TDM_QUERY_BOOL, qr, "the query in flight during tdm_client_ring");
    rc = tdm_client_ring(u, 0, 0);
    cr_assert_eq(rc, 0, "tdm_client_ring with nothing in flight: %d %s", rc, tdm_client_errstr(u));
    cr_assert_eq(tdm_client_ring_open(u), 1);
    rc = tdm_client_ring(u, 65536, 0);
    cr_assert_eq(rc, TDM_CLIENT_EINVAL, "a second tdm_client_ring returned %d, expected EINVAL", rc);
    cr_assert_eq(tdm_client_ring_open(u), 1, "a second tdm_client_ring closed the rings");
    cr_assert_eq(tdm_client_err(u), 0, "%s", tdm_client_errstr(u));
    small_check(&s, u, sid, "a ring client after a second tdm_client_ring");

    /* (d) raw: RingOpen and a StatsRequest in one write: the RingOpen refused, the stats
       answered, both on the socket */
    {
        Tandem__V1__RingOpen ro;
        Tandem__V1__StatsRequest sr;
        Tandem__V1__Request r1 = ring_open_req(7, 0, &ro), r2 = stats_req(8, &sr);
        size_t n1, n2;
        uint8_t *f1 = frame_of(&r1, &n1), *f2 = frame_of(&r2, &n2);
        uint8_t *both = malloc(n1 + n2);
        cr_assert_not_null(both);
        memcpy(both, f1, n1);
        memcpy(both + n1, f2, n2);
        cr_assert_eq(raw_write_all(fd, both, n1 + n2), 0);
        free(both);
        free(f1);
        free(f2);
        int got_error = 0, got_stats = 0;
        for (int k = 0; k < 2; k++) {
            Tandem__V1__Reply *rep = recv_or_fail(fd, "RingOpen with a request after it");
            if (rep->id == 7) {
                expect_error(rep, "RingOpen with a request after it", 7, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST,
                             "ring_open", -1);
                got_error++;
            } else {
                cr_assert_eq(rep->id, 8, "a reply with id %llu", (unsigned long long)rep->id);
                cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_STATS,
                             "the StatsRequest after a RingOpen: body %d", (int)rep->body_case);
                cr_assert_eq(rep->stats->connections, 3, "stats: %u connections, expected 3",
                             rep->stats->connections);
                got_stats++;
            }
            tandem__v1__reply__free_unpacked(rep, NULL);
        }
        cr_assert(got_error == 1 && got_stats == 1, "replies: %d Errors for the RingOpen, %d StatsReplies", got_error,
                  got_stats);
        Tandem__V1__Reply *extra = NULL;
        char err[256];
        cr_assert_eq(raw_recv(fd, 200, &extra, err, sizeof err), RAW_TIMEOUT, "more on the socket after both replies");
        /* refused, nothing changed: a RingOpen alone now gets its rings */
        rring rr;
        uint32_t cap = ring_open_on(&rr, fd, 0, 9);
        cr_assert_eq(cap, 256u << 10, "RingOpen{bytes: 0} after a refusal: rings of %u bytes", cap);
        ring_stats_or_fail(&rr, 10, 3, "through rings opened after a refusal");
        ring_close(&rr, 0);
        fd = -1;
    }

    /* RingOpen before Hello: the first request must be Hello */
    {
        int fd2 = raw_connect(D.unix_addr);
        cr_assert(fd2 >= 0);
        Tandem__V1__RingOpen ro;
        Tandem__V1__Request rq = ring_open_req(11, 0, &ro);
        cr_assert_eq(raw_send(fd2, &rq), 0);
        Tandem__V1__Reply *rep = recv_or_fail(fd2, "RingOpen before Hello");
        expect_error(rep, "RingOpen before Hello", 11, TANDEM__V1__ERROR_CODE__ERROR_UNAUTHENTICATED, "hello", -1);
        tandem__v1__reply__free_unpacked(rep, NULL);
        close(fd2);
    }
    tdm_client_free(t);
    tdm_client_free(u);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0, "tandemd did not shut down cleanly");

    /* (b) --max-ring-bytes 0: no rings offered, raw or through libtandem */
    const char *flags[] = {"--max-ring-bytes", "0", NULL};
    dmn_start(&D, flags);
    fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    mr = hello_max_ring(fd, 1);
    cr_assert_eq(mr, 0, "--max-ring-bytes 0: HelloReply.limits.max_ring_bytes %u", mr);
    {
        Tandem__V1__RingOpen ro;
        Tandem__V1__Request rq = ring_open_req(3, 65536, &ro);
        Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
        expect_error(rep, "RingOpen under --max-ring-bytes 0", 3, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST,
                     "ring_open", -1);
        tandem__v1__reply__free_unpacked(rep, NULL);
        Tandem__V1__StatsRequest sr;
        rq = stats_req(4, &sr);
        rep = raw_call_or_fail(fd, &rq);
        cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_STATS, "stats after the refusal: body %d",
                     (int)rep->body_case);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    u = lib_connect(D.unix_addr, 30000);
    small_put(&s, u, sid, "under --max-ring-bytes 0");
    expect_refused(u, "--max-ring-bytes 0");
    small_check(&s, u, sid, "a Unix client refused rings by --max-ring-bytes 0");
    tdm_client_free(u);
    close(fd);
    small_free(&s);
}

/* ==== 6. a hostile ring client ============================================================== */

Test(ring, hostile_ring_client)
{
    small s;
    small_make(&s);
    dmn_start(&D, NULL);
    tdm_client *other = lib_connect(D.unix_addr, 30000);
    uint8_t sid[32];
    small_put(&s, other, sid, "the bystander");
    small_check(&s, other, sid, "the bystander, first");

    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0, "connect: %s", strerror(errno));
    raw_hello_or_fail(fd, 1);
    rring rr;
    uint32_t cap = ring_open_on(&rr, fd, 0, 2);
    cr_assert_eq(cap, 262144u, "RingOpen{bytes: 0} gave rings of %u bytes, expected 256 KiB", cap);

    /* the memfd cannot be shrunk, grown or unsealed by the client */
    errno = 0;
    cr_assert_eq(ftruncate(rr.memfd, 4096), -1, "ftruncate shrank the ring's memfd");
    cr_assert_eq(errno, EPERM, "ftruncate(4096): %s, expected EPERM", strerror(errno));
    errno = 0;
    cr_assert_eq(ftruncate(rr.memfd, (off_t)rr.map_bytes * 2), -1, "ftruncate grew the ring's memfd");
    cr_assert_eq(errno, EPERM, "ftruncate(grow): %s, expected EPERM", strerror(errno));
    errno = 0;
    cr_assert_eq(fcntl(rr.memfd, F_ADD_SEALS, F_SEAL_WRITE), -1, "the client could add a seal");
    cr_assert_eq(errno, EPERM, "F_ADD_SEALS: %s, expected EPERM (F_SEAL_SEAL)", strerror(errno));
    struct stat st;
    cr_assert_eq(fstat(rr.memfd, &st), 0);
    cr_assert_eq((unsigned long long)st.st_size, (unsigned long long)rr.map_bytes, "the memfd is now %lld bytes",
                 (long long)st.st_size);
    small_check(&s, other, sid, "the bystander while a raw client holds rings");

    /* (a) a StatsRequest written by hand: the StatsReply comes through the reply ring, nothing
       on the socket, and the server took every request byte */
    ring_stats_or_fail(&rr, 0x1234567890abcdefull, 2, "a StatsRequest written into the ring by hand");
    Tandem__V1__Reply *rep = NULL;
    char err[256] = "";
    cr_assert_eq(raw_recv(fd, 200, &rep, err, sizeof err), RAW_TIMEOUT,
                 "bytes came on the socket of a connection with rings");
    ring_wait_taken(&rr, 2000, "after a StatsRequest");
    cr_assert_eq(atomic_load(&rr.h->rep_head), atomic_load(&rr.h->rep_tail), "more than one reply in the reply ring");

    /* a second RingOpen, through the rings: refused there, and the connection goes on */
    {
        Tandem__V1__RingOpen ro;
        Tandem__V1__Request rq = ring_open_req(3, 0, &ro);
        rep = ring_call_or_fail(&rr, &rq);
        expect_error(rep, "a second RingOpen, through the rings", 3, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST,
                     "ring_open", -1);
        tandem__v1__reply__free_unpacked(rep, NULL);
        ring_stats_or_fail(&rr, 4, 2, "after a second RingOpen");
    }
    cr_assert_eq(atomic_load(&rr.h->closed), 0u);

    /* (b) req_head out of bounds: that connection closed (`closed`, then EOF), nothing else: not a
       byte taken from the ring (the req_tail stays), no reply (a frame read from garbage would get
       an Error in the reply ring) */
    uint64_t tail = atomic_load_explicit(&rr.h->req_tail, memory_order_acquire);
    uint64_t rh_b = atomic_load(&rr.h->rep_head);
    atomic_store_explicit(&rr.h->req_head, tail + rr.cap + 1, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    static const uint8_t bell = 0x62;
    (void)raw_write_all(fd, &bell, 1); /* the doorbell, whatever srv_sleep says */
    int eof = raw_wait_eof(fd, 5000);
    cr_assert_eq(eof, RAW_EOF, "req_head past the ring: the socket did not reach EOF within 5 s (%d)", eof);
    cr_assert_eq(atomic_load_explicit(&rr.h->closed, memory_order_acquire), 1u,
                 "the server closed the socket but not the header (closed = %u)", atomic_load(&rr.h->closed));
    cr_assert_eq(atomic_load(&rr.h->req_tail), tail, "the server took bytes from a ring whose head is out of bounds");
    cr_assert_eq(atomic_load(&rr.h->rep_head), rh_b, "the server answered bytes of a ring whose head is out of bounds");
    ring_close(&rr, 0);
    cr_assert(dmn_running(&D), "tandemd is gone after a client broke its ring");
    small_check(&s, other, sid, "the bystander after a client's req_head went past its ring");

    /* (c) rep_tail past rep_head: the server, about to reply, closes the connection and writes
       nothing into the reply ring */
    cap = ring_open_raw(&rr, D.unix_addr, 65536, 5);
    cr_assert_eq(cap, 65536u, "RingOpen{bytes: 65536}: rings of %u", cap);
    uint64_t rh = atomic_load(&rr.h->rep_head);
    atomic_store_explicit(&rr.h->rep_tail, rh + 12345, memory_order_release);
    {
        Tandem__V1__StatsRequest sr;
        Tandem__V1__Request rq = stats_req(6, &sr);
        ring_send_or_fail(&rr, &rq);
    }
    eof = raw_wait_eof(rr.fd, 5000);
    cr_assert_eq(eof, RAW_EOF, "rep_tail past rep_head: the socket did not reach EOF within 5 s (%d)", eof);
    cr_assert_eq(atomic_load_explicit(&rr.h->closed, memory_order_acquire), 1u, "closed = %u after the EOF",
                 atomic_load(&rr.h->closed));
    cr_assert_eq(atomic_load(&rr.h->rep_head), rh, "the server wrote a reply behind a broken rep_tail");
    ring_close(&rr, 1);

    cr_assert(dmn_running(&D), "tandemd is gone after a client broke its ring");
    small_check(&s, other, sid, "the bystander at the end");
    uint32_t nc = connections_settle(other, 1);
    cr_assert_eq(nc, 1, "%u connections open: the broken clients' should be gone", nc);
    tdm_client_free(other);
    small_free(&s);
}

/* ==== 7. garbage in the ring ================================================================ */

/* Writes bytes into a fresh connection's request ring: the socket's Error for them (id 0,
 * field "frame", code) comes in the reply ring; then the close (closes) or a StatsRequest
 * answered as usual. */
static void garbage_case(const void *bytes, size_t n, int code, int closes, const char *what)
{
    rring rr;
    ring_open_raw(&rr, D.unix_addr, 0, 2);
    cr_assert_eq(ring_put(&rr, bytes, n), 0, "%s: the request ring took it not", what);
    Tandem__V1__Reply *rep = NULL;
    char err[256] = "";
    int rc = ring_get(&rr, 5000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "%s: no Error in the reply ring: %s", what,
                 rc == RAW_EOF ? "the rings closed without one" : err);
    expect_error(rep, what, 0, code, "frame", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    if (closes) {
        rc = ring_get(&rr, 5000, &rep, err, sizeof err);
        cr_assert_eq(rc, RAW_EOF, "%s: after the Error the rings should close (got %d: %s)", what, rc,
                     rc == RAW_REPLY ? "another reply" : err);
        int eof = raw_wait_eof(rr.fd, 5000);
        cr_assert_eq(eof, RAW_EOF, "%s: the socket did not reach EOF within 5 s (%d)", what, eof);
        cr_assert_eq(atomic_load(&rr.h->closed), 1u);
    } else {
        ring_stats_or_fail(&rr, 9, UINT32_MAX, what); /* the closed ones may still linger */
        cr_assert_eq(atomic_load(&rr.h->closed), 0u, "%s: the rings say closed", what);
    }
    ring_close(&rr, 0);
}

Test(ring, garbage_frame_in_the_ring)
{
    small s;
    small_make(&s);
    dmn_start(&D, NULL);
    tdm_client *other = lib_connect(D.unix_addr, 30000);
    uint8_t sid[32];
    small_put(&s, other, sid, "the bystander");

    static const uint8_t zero_len[4] = {0, 0, 0, 0};
    garbage_case(zero_len, sizeof zero_len, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, 1, "frame length 0 in the ring");
    small_check(&s, other, sid, "the bystander after frame length 0 in a ring");
    static const uint8_t huge_len[4] = {0xff, 0xff, 0xff, 0xff};
    garbage_case(huge_len, sizeof huge_len, TANDEM__V1__ERROR_CODE__ERROR_LIMIT, 1,
                 "frame length 0xFFFFFFFF in the ring");
    static const uint8_t undecodable[7] = {0, 0, 0, 3, 0xff, 0xff, 0xff};
    garbage_case(undecodable, sizeof undecodable, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, 0,
                 "an undecodable frame in the ring");

    cr_assert(dmn_running(&D), "tandemd is gone");
    small_check(&s, other, sid, "the bystander at the end");
    uint32_t nc = connections_settle(other, 1);
    cr_assert_eq(nc, 1, "%u connections open after the garbage senders left", nc);
    tdm_client_free(other);
    small_free(&s);
}

/* ==== 8. clients that die mid-request ======================================================= */

Test(ring, client_dies_mid_request)
{
    small s;
    small_make(&s);
    dmn_start(&D, NULL);
    enum { DYING = 21 };
    for (int i = 0; i < DYING; i++) {
        rring rr;
        ring_open_raw(&rr, D.unix_addr, i % 2 ? 65536 : 0, 2);
        if (i == DYING - 1) {
            /* a whole request, gone before its reply */
            Tandem__V1__StatsRequest sr;
            Tandem__V1__Request rq = stats_req(3, &sr);
            ring_send_or_fail(&rr, &rq);
        } else {
            /* a frame announcing 1000 bytes, 10 of them written */
            uint8_t part[14] = {0, 0, 0x03, 0xe8, 0x08, 0x01, 0x92, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
            cr_assert_eq(ring_put(&rr, part, sizeof part), 0, "client %d: the request ring took it not", i);
        }
        ring_close(&rr, i % 3 == 0); /* the mapping let go before or after the socket */
    }
    tdm_client *c = lib_connect(D.unix_addr, 30000);
    uint32_t nc = connections_settle(c, 1);
    cr_assert_eq(nc, 1, "%u connections open: the %d dead ring clients' should be gone", nc, DYING);
    uint8_t sid[32];
    small_put(&s, c, sid, "after the dead ring clients");
    small_check(&s, c, sid, "a plain client after the dead ring clients");
    tdm_client *ring = lib_ring(D.unix_addr, 0, 0, 30000);
    small_check(&s, ring, sid, "a ring client after the dead ring clients");
    tdm_stats st;
    cr_assert_eq(tdm_stats_get(ring, &st), 0, "%s", tdm_client_errstr(ring));
    cr_assert_eq(st.connections, 2, "stats through the ring: %u connections, expected 2", st.connections);
    cr_assert(dmn_running(&D), "tandemd is gone");
    tdm_client_free(ring);
    tdm_client_free(c);
    small_free(&s);
}

/* ==== 9. the server stops under a ring client =============================================== */

typedef struct qthread {
    tdm_client *c;
    const uint8_t *sid;
    const double *poses;
    tdm_query_result res[SMALL_N];
    int rc;
    double secs;
    atomic_int done;
    pthread_t th;
} qthread;

static void *qthread_main(void *arg)
{
    qthread *q = arg;
    double t0 = now_s();
    q->rc = tdm_query(q->c, q->sid, TDM_QUERY_BOOL, q->poses, 1, SMALL_N, 0, q->res, NULL);
    q->secs = now_s() - t0;
    atomic_store(&q->done, 1);
    return NULL;
}

static void qthread_start(qthread *q, tdm_client *c, const uint8_t *sid, const double *poses)
{
    memset(q, 0, sizeof *q);
    q->c = c;
    q->sid = sid;
    q->poses = poses;
    q->rc = 1;
    atomic_init(&q->done, 0);
    cr_assert_eq(pthread_create(&q->th, NULL, qthread_main, q), 0);
}

/* 1 once the query returned (joined), 0 if it still waits after timeout_s. */
static int qthread_wait(qthread *q, double timeout_s)
{
    double t0 = now_s();
    while (!atomic_load(&q->done) && now_s() - t0 < timeout_s) sleep_us(1000);
    if (!atomic_load(&q->done)) return 0;
    pthread_join(q->th, NULL);
    return 1;
}

/* Waits (2 s at most) until the process is stopped (state T in /proc/PID/stat). */
static void wait_stopped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char state = '?';
    for (double t0 = now_s(); now_s() - t0 < 2;) {
        char *text = gen_read_file(path, NULL);
        const char *p = text ? strrchr(text, ')') : NULL;
        state = p && p[1] == ' ' ? p[2] : '?';
        free(text);
        if (state == 'T') return;
        sleep_us(1000);
    }
    cr_assert(0, "tandemd (pid %d) is not stopped after SIGSTOP: state %c", (int)pid, state);
}

static void expect_closed(const qthread *q, tdm_client *c, const char *what)
{
    cr_assert(q->rc == TDM_CLIENT_ECLOSED || q->rc == TDM_CLIENT_EIO,
              "%s: tdm_query returned %d (%s), expected TDM_CLIENT_ECLOSED or TDM_CLIENT_EIO", what, q->rc,
              tdm_client_errstr(c));
    cr_assert(q->secs < 5.0, "%s: tdm_query took %.2f s to fail", what, q->secs);
    cr_assert_eq(tdm_client_err(c), q->rc, "%s: the connection's error is %d, the query's %d", what,
                 tdm_client_err(c), q->rc);
    tdm_query_result res[SMALL_N];
    int again = tdm_query(c, q->sid, TDM_QUERY_BOOL, q->poses, 1, SMALL_N, 0, res, NULL);
    cr_assert_eq(again, q->rc, "%s: a second query returned %d, the first %d", what, again, q->rc);
}

Test(ring, server_stop_wakes_a_sleeping_client)
{
    small s;
    small_make(&s);

    /* SIGTERM with an idle ring client: tandemd exits cleanly, the socket shows the close,
       and the client's next query fails at once */
    dmn_start(&D, NULL);
    tdm_client *c = lib_ring(D.unix_addr, 0, 0, 0);
    uint8_t sid[32];
    small_put(&s, c, sid, "a ring client");
    small_check(&s, c, sid, "a ring client");
    cr_assert_eq(kill(D.pid, SIGTERM), 0);
    int st = -1;
    for (double t0 = now_s(); now_s() - t0 < 10;) {
        pid_t w = waitpid(D.pid, &st, WNOHANG);
        if (w == D.pid) {
            D.pid = 0;
            break;
        }
        sleep_us(10000);
    }
    cr_assert_eq(D.pid, 0, "tandemd did not exit within 10 s of SIGTERM with an idle ring client");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tandemd's exit after SIGTERM: wait status %d", st);
    struct pollfd p = {.fd = tdm_client_fd(c), .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 5000), 1, "the ring client's socket does not show the server's close");
    qthread q;
    qthread_start(&q, c, sid, s.wire);
    cr_assert(qthread_wait(&q, 5.0), "a query on a ring client of an exited tandemd still waits after 5 s");
    expect_closed(&q, c, "after SIGTERM");
    tdm_client_free(c);

    /* SIGKILL while the client sleeps for its reply: tandemd stopped first (SIGSTOP), so the
       query cannot be answered; the client must wake when the server dies */
    dmn_start(&D, NULL);
    c = lib_ring(D.unix_addr, 0, 0, 0);
    small_put(&s, c, sid, "a ring client");
    small_check(&s, c, sid, "a ring client");
    cr_assert_eq(kill(D.pid, SIGSTOP), 0);
    wait_stopped(D.pid);
    qthread_start(&q, c, sid, s.wire);
    sleep_us(300000);
    cr_assert_eq(atomic_load(&q.done), 0, "a stopped tandemd answered a query (rc %d)", q.rc);
    dmn_stop(&D, SIGKILL);
    cr_assert(qthread_wait(&q, 5.0), "a ring client waiting for its reply was not woken within 5 s of SIGKILL");
    expect_closed(&q, c, "after SIGKILL");
    tdm_client_free(c);
    small_free(&s);
}

/* ==== 10. ring sizes ======================================================================== */

Test(ring, sizes_are_rounded_and_clamped)
{
    const char *flags[] = {"--max-ring-bytes", "131072", NULL};
    dmn_start(&D, flags);
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    uint32_t mr = hello_max_ring(fd, 1);
    cr_assert_eq(mr, 131072u, "--max-ring-bytes 131072: HelloReply.limits.max_ring_bytes %u", mr);
    static const struct {
        uint32_t want, got;
    } cases[] = {{0, 131072},      {1, 65536},          {65535, 65536},      {65536, 65536},
                 {65537, 131072},  {100000, 131072},    {131072, 131072},    {131073, 131072},
                 {196608, 131072}, {1u << 31, 131072},  {UINT32_MAX, 131072}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rring rr;
        uint32_t cap = i == 0 ? ring_open_on(&rr, fd, cases[i].want, 2)
                              : ring_open_raw(&rr, D.unix_addr, cases[i].want, 2);
        cr_assert_eq(cap, cases[i].got, "RingOpen{bytes: %u}: rings of %u bytes, expected %u", cases[i].want, cap,
                     cases[i].got);
        /* the header and the mapping's size were checked against cap by ring_open_on; the
           rings carry a request and its reply */
        ring_stats_or_fail(&rr, 3, UINT32_MAX, "through rings of a rounded size");
        ring_close(&rr, 0);
    }
    cr_assert(dmn_running(&D), "tandemd is gone");
}

/* A client's rings are charged to --max-ring-memory, not to the partial frames' budget
 * (--max-input-bytes): 1 MiB rings open under --max-input-bytes 1M, a second pair that would
 * pass --max-ring-memory is refused with ERROR_BUSY naming it (the connection served on the
 * socket, smaller rings still fit), a large frame from a third client is not refused for the
 * rings' memory, and the room comes back when the first client leaves. */
Test(ring, rings_have_a_memory_budget_of_their_own)
{
    const uint32_t MIB = 1u << 20;
    /* one 1 MiB pair maps 2 MiB and a 4 KiB header: one fits in 3 MiB, two do not */
    const char *flags[] = {"--max-input-bytes", "1M", "--max-ring-bytes", "1M", "--max-ring-memory", "3M", NULL};
    small s;
    small_make(&s);
    dmn_start(&D, flags);
    tdm_client *a = lib_ring(D.unix_addr, MIB, 0, 30000);
    uint8_t sid[32];
    small_put(&s, a, sid, "through 1 MiB rings, max-input-bytes 1M");
    small_check(&s, a, sid, "through 1 MiB rings, max-input-bytes 1M");

    tdm_client *b = lib_connect(D.unix_addr, 30000);
    int rc = tdm_client_ring(b, MIB, 0);
    cr_assert_eq(rc, TDM_CLIENT_ESERVER, "a second 1 MiB pair past max-ring-memory 3M: %d (%s), expected ESERVER", rc,
                 tdm_client_errstr(b));
    const tdm_server_error *e = tdm_client_server_error(b);
    cr_assert_not_null(e);
    cr_assert_eq(e->code, TDM_SERVER_BUSY, "error code %d (%s), expected BUSY", e->code, e->message);
    cr_assert_str_eq(e->field, "ring_open", "error field '%s' (%s)", e->field, e->message);
    cr_assert(strstr(e->message, "max-ring-memory 3145728"), "the refusal does not name the limit: %s", e->message);
    cr_assert_eq(tdm_client_ring_open(b), 0);
    cr_assert_eq(tdm_client_err(b), 0, "the refusal broke the connection: %s", tdm_client_errstr(b));
    small_check(&s, b, sid, "on the socket after a refused RingOpen");
    rc = tdm_client_ring(b, 65536, 0); /* 132 KiB more: fits */
    cr_assert_eq(rc, 0, "64 KiB rings within max-ring-memory: %d (%s)", rc, tdm_client_errstr(b));
    small_check(&s, b, sid, "through 64 KiB rings beside the 1 MiB ones");

    /* a 700 KiB frame on a third connection: within max-input-bytes whatever the rings map */
    tdm_mesh *big = gen_torus(1.5, 0.5, 240, 120);
    cr_assert_not_null(big);
    size_t len = 0;
    cr_assert_eq(tdm_encode_mesh_put(NULL, 0, &len, 1, "big", big->verts, big->n_verts, big->tris, big->n_tris),
                 TDM_CLIENT_ENOBUFS);
    cr_assert(len > 600u << 10 && len < 800u << 10, "the MeshPut frame is %zu bytes", len);
    tdm_client *c = lib_connect(D.unix_addr, 30000);
    uint8_t mid[32];
    put_mesh(c, "big", big, mid, 1, "a large frame beside 2.1 MiB of rings, max-input-bytes 1M");

    /* the first client leaves: its 2 MiB come back */
    tdm_client_free(a);
    cr_assert_eq(connections_settle(c, 2), 2u, "the ring client's connection did not go");
    tdm_client *d = lib_ring(D.unix_addr, MIB, 0, 30000);
    small_check(&s, d, sid, "through 1 MiB rings after the first pair was let go");
    tdm_client_free(b);
    tdm_client_free(c);
    tdm_client_free(d);
    tdm_mesh_free(big);
    small_free(&s);
    cr_assert(dmn_running(&D), "tandemd is gone");
}

/* A ring idle for --ring-park-us is parked: its loop (kept polling here by a long
 * --loop-spin-us, so that nothing else raises the flag) raises srv_sleep and stops looking at
 * it; a request written without a doorbell waits, and the doorbell brings it in. A libtandem
 * client idle past the park time is answered as before (its next request rings the bell). */
Test(ring, idle_rings_are_parked)
{
    const char *flags[] = {"--ring-park-us", "50000", "--loop-spin-us", "1000000", NULL};
    small s;
    small_make(&s);
    dmn_start(&D, flags);
    rring r;
    ring_open_raw(&r, D.unix_addr, 65536, 1);
    ring_stats_or_fail(&r, 2, UINT32_MAX, "a fresh ring");
    /* (within the loop's second of polling after that request: past it, the loop would sleep and
       raise every flag) */
    double t0 = now_s();
    while (!atomic_load_explicit(&r.h->srv_sleep, memory_order_acquire) && now_s() - t0 < 0.8) sleep_us(1000);
    cr_assert(atomic_load_explicit(&r.h->srv_sleep, memory_order_acquire),
              "an idle ring's srv_sleep still down after 0.8 s (--ring-park-us 50000, a loop that polls 1 s)");

    /* a StatsRequest without the doorbell: not looked at */
    Tandem__V1__StatsRequest sr;
    Tandem__V1__Request rq = stats_req(3, &sr);
    size_t n;
    uint8_t *f = frame_of(&rq, &n);
    uint64_t head = atomic_load_explicit(&r.h->req_head, memory_order_relaxed);
    tdm_ring_copy_in(tdm_ring_req_data(r.map), r.cap, head, f, n);
    atomic_store_explicit(&r.h->req_head, head + n, memory_order_release);
    free(f);
    Tandem__V1__Reply *rep = NULL;
    char err[256] = "";
    int rc = ring_get(&r, 300, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_TIMEOUT, "a parked ring's request was answered without its doorbell (%d: %s)", rc, err);
    cr_assert_eq(atomic_load_explicit(&r.h->req_tail, memory_order_acquire), head,
                 "a parked ring's request bytes were taken without its doorbell");
    ring_bell(&r);
    rc = ring_get(&r, 5000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "no reply after the doorbell: %s", err);
    cr_assert_eq(rep->id, 3u);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_STATS, "body %d", (int)rep->body_case);
    tandem__v1__reply__free_unpacked(rep, NULL);
    ring_close(&r, 0);

    /* a well-behaved client across its rings' parking */
    tdm_client *c = lib_ring(D.unix_addr, 0, 0, 5000);
    uint8_t sid[32];
    small_put(&s, c, sid, "through rings");
    for (int i = 0; i < 3; i++) {
        small_check(&s, c, sid, "through rings, then idle past --ring-park-us");
        sleep_us(150000);
    }
    tdm_client_free(c);
    small_free(&s);
    cr_assert(dmn_running(&D), "tandemd is gone");
}
