/* `tandem motions` (tools/motions_cmd.c, robot/motions.h): motion checks of a
 * generated two-joint arm (box links, one of them able to hit the base) in a
 * generated planning scene (one box obstacle), run through the real binary and
 * compared, motion by motion, with a reference that checks the motion's states
 * one at a time with the library (robot_scene + tdm_sched, one bool query per
 * run, as `tandem check --urdf` answers a configuration): the answers must be
 * equal, k for k. The reference computes n and q_k itself, from the formula in
 * issue 13 (point 5), not from robot/motions.h, which is tested on its own at edge
 * values. */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "spawn.h"
#include "geom/primitive.h"
#include "robot/robot_scene.h"
#include "tools/io.h"
#include "robot/motion_rounds.h"
#include "robot/motions.h"
#include "workpile/sched.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN (the path of the tandem executable) must be defined by the build"
#endif


static uint64_t seed;
static char dir[256];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static const char *path(const char *name)
{
    static char buf[16][512];
    static int k;
    char *p = buf[k++ % 16];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "w");
    cr_assert_not_null(f, "cannot write %s", path(name));
    fputs(text, f);
    fclose(f);
}

/* base_link: a slab; link1 a post turning about z; link2 a bar at the post's top
 * turning about y, long enough to reach the obstacle and, bent down, the base. */
static const char *urdf_text =
    "<?xml version='1.0'?>\n"
    "<robot name='arm2'>\n"
    "  <link name='base_link'><collision><origin xyz='0 0 0.05'/><geometry><box size='0.3 0.3 0.1'/></geometry>"
    "</collision></link>\n"
    "  <joint name='j1' type='revolute'><parent link='base_link'/><child link='link1'/>"
    "<origin xyz='0 0 0.1'/><axis xyz='0 0 1'/><limit lower='-3.14' upper='3.14'/></joint>\n"
    "  <link name='link1'><collision><origin xyz='0 0 0.2'/><geometry><box size='0.06 0.06 0.4'/></geometry>"
    "</collision></link>\n"
    "  <joint name='j2' type='revolute'><parent link='link1'/><child link='link2'/>"
    "<origin xyz='0 0 0.4'/><axis xyz='0 1 0'/><limit lower='-2.6' upper='2.6'/></joint>\n"
    "  <link name='link2'><collision><origin xyz='0.3 0 0'/><geometry><box size='0.5 0.05 0.05'/></geometry>"
    "</collision></link>\n"
    "</robot>\n";

static const char *srdf_text = "<robot name='arm2'><disable_collisions link1='link1' link2='link2' reason='Adjacent'/>"
                               "<disable_collisions link1='base_link' link2='link1' reason='Adjacent'/></robot>\n";

static const char *scene_text = "name: motions\n"
                                "world:\n"
                                "  collision_objects:\n"
                                "    - id: post\n"
                                "      header: {frame_id: world}\n"
                                "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
                                "      primitive_poses: [{position: [0.45, 0.1, 0.4], orientation: [0, 0, 0, 1]}]\n";

#define J 2
static tdm_robot *robot;
static tdm_robot_scene *rs;
static tdm_sched *sched;

static int loader(void *ctx, const char *p, tdm_mesh **out, char *err, size_t errlen)
{
    (void)ctx;
    return tdm_mesh_load_file(p, TDM_ORIGIN_RAW, out, err, errlen);
}

static void suite_init(void)
{
    seed = gen_seed(0x30710115ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tandem-motions-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    write_file("arm.urdf", urdf_text);
    write_file("arm.srdf", srdf_text);
    write_file("scene.yaml", scene_text);
    char err[512];
    tdm_planning_scene *ps;
    cr_assert_eq(tdm_robot_load(path("arm.urdf"), path("arm.srdf"), &robot, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(robot->n_active, J);
    cr_assert_eq(tdm_planning_scene_read(path("scene.yaml"), &ps, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_scene_create(robot, ps, loader, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err),
                 TDM_OK, "%s", err);
    tdm_planning_scene_free(ps);
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_CPU;
    c.threads = 1;
    c.calibrate = 0;
    char why[320];
    cr_assert_eq(tdm_sched_create(&c, &sched, why, sizeof why), TDM_OK, "%s", why);
}

static void suite_fini(void)
{
    tdm_sched_destroy(sched);
    tdm_robot_scene_destroy(rs);
    tdm_robot_free(robot);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(motions, .init = suite_init, .fini = suite_fini, .timeout = 240);

/* ---- the reference: one state, one engine run ---- */

static int state_collides(const double q[J])
{
    tdm_xform links[3], poses[3];
    cr_assert_eq(rs->n_elements, 3);
    cr_assert_eq(tdm_robot_scene_poses(rs, q, J, links, poses), TDM_OK);
    tdm_sched_query qu = {rs->scene, poses, TDM_MODE_BOOL, 1, NULL, NULL};
    tdm_sched_result r;
    cr_assert_eq(tdm_sched_run(sched, &qu, 1, &r), TDM_OK);
    return (int)r.colliding;
}

/* n and q_k written out here from the formula. */
static long reference(const double a[J], const double b[J], double res, uint64_t *n_out)
{
    double d = 0;
    for (int j = 0; j < J; j++) d = fmax(d, fabs(b[j] - a[j]));
    double c = ceil(d / res) + 1;
    uint64_t n = c < 2 ? 2 : (uint64_t)c;
    if (n_out) *n_out = n;
    for (uint64_t k = 0; k < n; k++) {
        double q[J];
        for (int j = 0; j < J; j++) q[j] = a[j] + (double)k / (double)(n - 1) * (b[j] - a[j]);
        if (state_collides(q)) return (long)k;
    }
    return -1;
}

/* ---- the binary ---- */

typedef tdm_run_result run_result;

static run_result run(const char *const *args)
{
    char o[PATH_MAX], e[PATH_MAX];
    snprintf(o, sizeof o, "%s", path("stdout"));
    snprintf(e, sizeof e, "%s", path("stderr"));
    run_result r;
    int rc = tdm_run_capture(TANDEM_BIN, args, o, e, &r);
    cr_assert_eq(rc, 0, "cannot run %s: %s", TANDEM_BIN, strerror(rc));
    return r;
}

static void run_free(run_result *r) { tdm_run_free(r); }

/* Runs `tandem motions` on motions.txt at resolution res with extra args, and
 * checks --out and the summary line against want[0..n). */
static void check_binary(const char *res, const char *batch, const long *want, size_t n)
{
    size_t want_colliding = 0;
    for (size_t i = 0; i < n; i++) want_colliding += want[i] >= 0;
    unlink(path("out.txt"));
    const char *args[] = {"motions", "--urdf", path("arm.urdf"), "--srdf", path("arm.srdf"), "--world",
                          path("scene.yaml"), "--motions", path("motions.txt"), "--resolution", res, "--threads", "2",
                          "--out", path("out.txt"), batch ? "--batch" : NULL, batch, NULL};
    run_result r = run(args);
    cr_assert_eq(r.status, 0, "tandem motions (batch %s) failed: %s", batch ? batch : "default", r.err);
    char **lines;
    size_t k = gen_split_lines(r.out, &lines);
    cr_assert(k >= 1);
    unsigned long long nq, nc;
    double s, qps;
    char tail;
    cr_assert_eq(sscanf(lines[k - 1], "queries=%llu seconds=%lf qps=%lf colliding=%llu%c", &nq, &s, &qps, &nc, &tail),
                 4, "summary: %s", lines[k - 1]);
    cr_assert_eq(nq, n);
    cr_assert_eq(nc, want_colliding);
    cr_assert(s >= 0);
    free(lines);
    char *out = gen_read_file(path("out.txt"), NULL);
    cr_assert_not_null(out);
    k = gen_split_lines(out, &lines);
    cr_assert_eq(k, n);
    for (size_t i = 0; i < n; i++) {
        char *end;
        long v = strtol(lines[i], &end, 10);
        cr_assert_eq(*end, 0, "line %zu: '%s'", i + 1, lines[i]);
        cr_assert_eq(v, want[i], "seed=%llu batch %s, motion %zu: %ld, reference %ld", (unsigned long long)seed,
                     batch ? batch : "default", i + 1, v, want[i]);
    }
    free(lines);
    free(out);
    run_free(&r);
}

static void random_config(gen_rng *g, double q[J])
{
    q[0] = gen_range(g, -3.14, 3.14);
    q[1] = gen_range(g, -2.6, 2.6);
}

/* ---- tests ---- */

Test(motions, state_count_at_edges)
{
    double a[J] = {0.25, -1}, b[J];
    struct { double d0, d1, r; uint64_t n; } c[] = {
        {0, 0, 0.1, 2},              /* a == b */
        {0.05, 0, 0.1, 2},           /* less than one step */
        {0.125, 0, 0.125, 2},        /* exactly one step */
        {0.25, 0, 0.125, 3},         /* exact multiples: ceil adds nothing */
        {0.5, -0.25, 0.125, 5},      /* the largest |b - a| decides, sign ignored */
        {0, -0.5, 0.125, 5},
        {0.5 + 0x1p-40, 0, 0.125, 6}, /* just past a multiple */
        {2, 0, 0.0009765625, 2049},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        b[0] = a[0] + c[i].d0;
        b[1] = a[1] + c[i].d1;
        cr_assert_eq(tdm__motion_states(a, b, J, c[i].r), c[i].n, "case %zu: %llu", i,
                     (unsigned long long)tdm__motion_states(a, b, J, c[i].r));
        double q[J];
        tdm__motion_state(a, b, J, 0, c[i].n, q);
        cr_assert(q[0] == a[0] && q[1] == a[1]);
        tdm__motion_state(a, b, J, c[i].n - 1, c[i].n, q);
        cr_assert(q[0] == b[0] && q[1] == b[1], "exact here: dyadic values");
    }
    /* The cap: 10^7 states is the most; a tiny resolution is refused, not overflowed. */
    b[0] = a[0] + 1;
    b[1] = a[1];
    cr_assert_eq(tdm__motion_states(a, b, J, 0x1p-23), 8388609);
    cr_assert_eq(tdm__motion_states(a, b, J, 1e-7), 0);
    cr_assert_eq(tdm__motion_states(a, b, J, 1e-300), 0);
    cr_assert_eq(tdm__motion_states(a, b, J, 4.9e-324), 0);
}

#define N_MOT 80

Test(motions, matches_state_by_state)
{
    gen_rng g = {seed};
    double m[N_MOT][2 * J];
    FILE *f = fopen(path("motions.txt"), "w");
    cr_assert_not_null(f);
    fprintf(f, "# j1 j2 (start) j1 j2 (end)\n\n");
    for (int i = 0; i < N_MOT; i++) {
        random_config(&g, m[i]);
        if (i % 8 == 3) {
            memcpy(m[i] + J, m[i], sizeof(double) * J); /* a == b: n = 2 */
        } else if (i % 8 == 5) {
            /* dyadic ends, |b - a| an exact multiple of R = 0.03125 */
            for (int j = 0; j < J; j++) {
                m[i][j] = round(m[i][j] * 1024) / 1024;
                m[i][J + j] = m[i][j] + 0.03125 * (double)gen_int(&g, -40, 40);
            }
        } else {
            random_config(&g, m[i] + J);
        }
        fprintf(f, "%.17g %.17g  %.17g %.17g\n", m[i][0], m[i][1], m[i][2], m[i][3]);
        if (i == 10) fprintf(f, "  \n# a comment\n");
    }
    fclose(f);
    long want[N_MOT];
    size_t free_n = 0, at0 = 0, later = 0;
    uint64_t states = 0;
    for (int i = 0; i < N_MOT; i++) {
        uint64_t n;
        want[i] = reference(m[i], m[i] + J, 0.03125, &n);
        states += n;
        cr_assert_eq(tdm__motion_states(m[i], m[i] + J, J, 0.03125), n, "motion %d", i + 1);
        if (i % 8 == 3) cr_assert_eq(n, 2);
        if (i % 8 == 5) {
            double d = fmax(fabs(m[i][2] - m[i][0]), fabs(m[i][3] - m[i][1]));
            cr_assert_eq(n, d == 0 ? 2 : (uint64_t)(d / 0.03125) + 1, "motion %d", i + 1);
        }
        free_n += want[i] < 0;
        at0 += want[i] == 0;
        later += want[i] > 0;
    }
    cr_log_info("%d motions, %llu states: %zu free, %zu colliding at 0, %zu later", N_MOT,
                (unsigned long long)states, free_n, at0, later);
    cr_assert(free_n > 0 && at0 > 0 && later > 0, "the motions must exercise each kind of answer");
    check_binary("0.03125", NULL, want, N_MOT);
    /* Tiny batches: motions cut across batches and rounds. */
    check_binary("0.03125", "7", want, N_MOT);
    check_binary("0.03125", "1", want, N_MOT);
}

Test(motions, empty_file)
{
    write_file("motions.txt", "# nothing\n\n");
    check_binary("0.1", NULL, NULL, 0);
}

Test(motions, errors)
{
    static const struct { const char *text, *needle; } bad[] = {
        {"0 0 0 0\n# x\n0.1 0.2 0.3\n", "motions.txt:3: 3 values, a motion has 4"},
        {"0 0 0 0 0\n", "motions.txt:1: 5 values"},
        {"\n0 nan 0 0\n", "motions.txt:2: value 2 is not finite"},
        {"0 0 inf 0\n", "motions.txt:1: value 3 is not finite"},
        {"0 0 0 x\n", "motions.txt:1: value 4 is not a number"},
        {"0 0 0 0\n0 0 3 0\n", "motions.txt:2: more than 10000000 states"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("motions.txt", bad[i].text);
        unlink(path("out2.txt"));
        const char *args[] = {"motions", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--motions",
                              path("motions.txt"), "--resolution", "1e-7", "--out", path("out2.txt"), NULL};
        run_result r = run(args);
        cr_assert_eq(r.status, 1, "bad motions %zu: exit %d", i, r.status);
        cr_assert_not_null(strstr(r.err, bad[i].needle), "bad motions %zu: stderr '%s' lacks '%s'", i, r.err,
                           bad[i].needle);
        cr_assert_eq(access(path("out2.txt"), F_OK), -1, "nothing is written");
        cr_assert_eq(r.out[0], 0, "nothing on stdout");
        run_free(&r);
    }
    /* Usage errors: the resolution, the mode, missing options. */
    write_file("motions.txt", "0 0 0.1 0\n");
    static const char *const res[] = {"0", "-0.1", "nan", "inf", "x", "0.1x", ""};
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
        const char *args[] = {"motions", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--motions",
                              path("motions.txt"), "--resolution", res[i], NULL};
        run_result r = run(args);
        cr_assert_eq(r.status, 2, "--resolution '%s': exit %d", res[i], r.status);
        cr_assert_not_null(strstr(r.err, "--resolution"));
        run_free(&r);
    }
    const char *contacts[] = {"motions", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--motions",
                              path("motions.txt"), "--resolution", "0.1", "--mode", "contacts", NULL};
    run_result r = run(contacts);
    cr_assert_eq(r.status, 2);
    run_free(&r);
    const char *missing[] = {"motions", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--motions",
                             path("motions.txt"), NULL};
    r = run(missing);
    cr_assert_eq(r.status, 2);
    run_free(&r);
    /* --mode bool is accepted. */
    const char *ok[] = {"motions", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--motions",
                        path("motions.txt"), "--resolution", "0.1", "--mode", "bool", NULL};
    r = run(ok);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "queries=1 "));
    run_free(&r);
}

/* ---- the rounds on their own (robot/motion_rounds.h), against a known answer ---- */

/* Runs rounds over motions whose states k >= first[i] collide (first[i] -1: none;
 * states past the first collision collide or not at random, as a real motion's
 * may) and returns the batches it took; the answers must be first[i]. */
static size_t rounds_against(const double *mot, size_t n, size_t batch, uint64_t window, const int64_t *first,
                             gen_rng *rng)
{
    tdm_motion_rounds *mc = NULL;
    size_t bad = 0;
    cr_assert_eq(tdm_motion_rounds_create(mot, n, 1, 1.0, batch, &mc, &bad), TDM_OK);
    tdm_motion_rounds_set_window(mc, window);
    uint64_t all = 0;
    for (size_t i = 0; i < n; i++) all += tdm_motion_rounds_states(mc, i);
    cr_assert_eq(tdm_motion_rounds_batch(mc), batch < all ? batch : all, "no batch larger than every state");
    double *q = malloc(batch * sizeof *q);
    uint32_t *col = malloc(batch * sizeof *col);
    size_t batches = 0, got;
    while ((got = tdm_motion_rounds_next(mc, q)) > 0) {
        cr_assert_leq(got, batch);
        batches++;
        for (size_t b = 0; b < got; b++) {
            /* motion i's state k is q = start + k (unit steps from 0 at resolution 1): recover (i, k) */
            size_t i = (size_t)(q[b] / 1000.0);
            int64_t k = (int64_t)llround(q[b] - 1000.0 * (double)i);
            col[b] = first[i] >= 0 && k >= first[i] && (k == first[i] || (gen_next(rng) & 1));
        }
        tdm_motion_rounds_take(mc, col, sizeof *col);
    }
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(tdm_motion_rounds_answer(mc, i), first[i], "motion %zu (window %llu, batch %zu): %lld, not %lld",
                     i, (unsigned long long)window, batch, (long long)tdm_motion_rounds_answer(mc, i),
                     (long long)first[i]);
    free(q);
    free(col);
    tdm_motion_rounds_free(mc);
    return batches;
}

Test(motions, rounds_answer_the_first_collision_whatever_the_window)
{
    gen_rng rng = {seed ^ 0x51ed};
    enum { N = 40 };
    double mot[2 * N];
    int64_t first[N];
    for (int trial = 0; trial < 30; trial++) {
        size_t n = 1 + gen_next(&rng) % N;
        for (size_t i = 0; i < n; i++) {
            uint64_t states = 2 + gen_next(&rng) % 300; /* from 1000 i to 1000 i + states - 1 */
            mot[2 * i] = 1000.0 * (double)i;
            mot[2 * i + 1] = mot[2 * i] + (double)(states - 1);
            first[i] = gen_next(&rng) % 3 == 0 ? -1 : (int64_t)(gen_next(&rng) % states);
        }
        size_t batch = 1 + gen_next(&rng) % 700;
        uint64_t windows[] = {0, 1, 16, 64, 1000};
        for (size_t w = 0; w < sizeof windows / sizeof *windows; w++)
            rounds_against(mot, n, batch, windows[w], first, &rng);
    }
    /* one free motion of 50 states alone: 16 + 32 + 2 states in three runs by default, one run with a
       window of 64 */
    double one[2] = {0, 49};
    int64_t none = -1;
    cr_assert_eq(rounds_against(one, 1, 4096, 0, &none, &rng), 3);
    cr_assert_eq(rounds_against(one, 1, 4096, 64, &none, &rng), 1);
}

/* Any state (tdm_motion_rounds_set_any): motions whose colliding states are an arbitrary set
 * (drawn at random, a third of them empty); every state checked at most once, every state of
 * a free motion checked, a colliding motion answered with one of its colliding states, and a
 * motion colliding at a probe answered by the first batch when the batch holds every probe. */
Test(motions, rounds_any_state_answer_a_colliding_state_and_probe_coarse_to_fine)
{
    gen_rng rng = {seed ^ 0xa11};
    enum { N = 24, S = 300 };
    double mot[2 * N];
    static uint8_t hit[N][S], seen[N][S];
    for (int trial = 0; trial < 40; trial++) {
        size_t n = 1 + gen_next(&rng) % N;
        uint64_t states[N];
        for (size_t i = 0; i < n; i++) {
            states[i] = 2 + gen_next(&rng) % (S - 2);
            mot[2 * i] = 1000.0 * (double)i;
            mot[2 * i + 1] = mot[2 * i] + (double)(states[i] - 1);
            int kind = (int)(gen_next(&rng) % 3);
            for (uint64_t k = 0; k < states[i]; k++)
                hit[i][k] = kind == 0 ? 0 : kind == 1 ? (gen_next(&rng) % 17 == 0) : (gen_next(&rng) % 3 == 0);
            memset(seen[i], 0, sizeof seen[i]);
        }
        unsigned probes = (unsigned)(gen_next(&rng) % (TDM_MOTION_MAX_PROBES + 3)); /* past the most too */
        size_t batch = 1 + gen_next(&rng) % 700;
        uint64_t window = gen_next(&rng) % 2 ? 64 : 0;
        tdm_motion_rounds *mc = NULL;
        size_t bad = 0;
        /* every other trial as paths: each motion through 2-4 points on its line, at whole steps, so
           that state k of motion i is still 1000 i + k, numbered along the path */
        double pts[4 * N];
        uint32_t np[N];
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            np[i] = 2 + (uint32_t)(gen_next(&rng) % 3);
            if (states[i] - 1 < np[i] - 1) np[i] = 2; /* no segment of length 0 */
            pts[at++] = mot[2 * i];
            for (uint32_t q = 1; q + 1 < np[i]; q++) /* inner points between the ends, in order */
                pts[at++] = mot[2 * i] + (double)(q * (states[i] - 1) / (np[i] - 1));
            pts[at++] = mot[2 * i + 1];
        }
        if (trial % 2)
            cr_assert_eq(tdm_motion_rounds_create_paths(pts, np, n, 1, 1.0, batch, &mc, &bad), TDM_OK);
        else
            cr_assert_eq(tdm_motion_rounds_create(mot, n, 1, 1.0, batch, &mc, &bad), TDM_OK);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(tdm_motion_rounds_states(mc, i), states[i], "motion %zu: %llu states", i,
                         (unsigned long long)tdm_motion_rounds_states(mc, i));
        tdm_motion_rounds_set_window(mc, window);
        tdm_motion_rounds_set_any(mc, probes);
        tdm_motion_rounds_set_linear(mc, trial % 4 >= 2); /* spread, and first to last (A/B runs) */
        cr_assert(tdm_motion_rounds_any(mc));
        batch = tdm_motion_rounds_batch(mc);
        double *q = malloc(batch * sizeof *q);
        uint32_t *col = malloc(batch * sizeof *col);
        size_t got, batches = 0;
        while ((got = tdm_motion_rounds_next(mc, q)) > 0) {
            batches++;
            for (size_t b = 0; b < got; b++) {
                size_t i = (size_t)(q[b] / 1000.0);
                int64_t k = (int64_t)llround(q[b] - 1000.0 * (double)i);
                cr_assert(i < n && k >= 0 && (uint64_t)k < states[i]);
                cr_assert_not(seen[i][k], "motion %zu state %lld checked twice", i, (long long)k);
                seen[i][k] = 1;
                col[b] = hit[i][k];
            }
            tdm_motion_rounds_take(mc, col, sizeof *col);
        }
        for (size_t i = 0; i < n; i++) {
            int64_t a = tdm_motion_rounds_answer(mc, i);
            int any_hit = 0;
            for (uint64_t k = 0; k < states[i]; k++) any_hit |= hit[i][k];
            if (!any_hit) {
                cr_assert_eq(a, -1, "free motion %zu answered %lld", i, (long long)a);
                for (uint64_t k = 0; k < states[i]; k++) cr_assert(seen[i][k], "free motion %zu: state %llu unchecked", i, (unsigned long long)k);
            } else {
                cr_assert(a >= 0 && (uint64_t)a < states[i] && hit[i][a] && seen[i][a],
                          "motion %zu answered %lld, not one of its colliding states", i, (long long)a);
            }
        }
        /* one motion colliding at a probe, the batch holding its probes: one batch */
        if (n == 1 && probes > 0 && batch >= (probes < states[0] ? probes : states[0])) {
            uint64_t k0 = tdm_motion_rounds_order(states[0], probes, 0);
            cr_assert_eq(k0, states[0] - 1, "the end is checked first");
        }
        free(q);
        free(col);
        tdm_motion_rounds_free(mc);
    }
    /* the order: a permutation, the end first, then the middle, the quarters, ...; the start
       among the probes once the interior's first levels are in */
    for (uint64_t n = 2; n < 200; n++)
        for (unsigned probes = 0; probes <= TDM_MOTION_MAX_PROBES; probes++) {
            static uint8_t mark[200];
            memset(mark, 0, sizeof mark);
            for (uint64_t p = 0; p < n; p++) {
                uint64_t k = tdm_motion_rounds_order(n, probes, p);
                cr_assert(k < n && !mark[k], "n %llu probes %u: position %llu gives %llu twice or out of range",
                          (unsigned long long)n, probes, (unsigned long long)p, (unsigned long long)k);
                mark[k] = 1;
            }
        }
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 0), 100);
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 1), 50);  /* the middle of 1 .. 99 */
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 2), 25);  /* of 1 .. 49 */
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 3), 75);  /* of 51 .. 99 */
    /* then spread, the probes left out: 101 states take a stride of 8 (13 states a pass), every
       8th state first (0, 8, .. 96), then the residue 4 (4, 12, .. 92: 100 is a probe), then 2 */
    for (uint64_t p = 4; p <= 16; p++) cr_assert_eq(tdm_motion_rounds_order(101, 4, p), 8 * (p - 4));
    for (uint64_t p = 17; p <= 28; p++) cr_assert_eq(tdm_motion_rounds_order(101, 4, p), 4 + 8 * (p - 17));
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 29), 2);
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 30), 10);
    /* 50 (a probe) left out of the residue 2: 2, 10, .., 42, 58, .. */
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 34), 42);
    cr_assert_eq(tdm_motion_rounds_order(101, 4, 35), 58);
    /* short motions (fewer than 16 states) go first to last after their probes */
    cr_assert_eq(tdm_motion_rounds_order(15, 4, 4), 0);
    cr_assert_eq(tdm_motion_rounds_order(15, 4, 5), 1);
    cr_assert_eq(tdm_motion_rounds_order(3, 16, 2), 0);    /* 2, 1, 0 */
    /* a colliding end answered by a first batch of the probes alone */
    double one[2] = {0, 99};
    tdm_motion_rounds *mc = NULL;
    size_t bad = 0;
    cr_assert_eq(tdm_motion_rounds_create(one, 1, 1, 1.0, 4096, &mc, &bad), TDM_OK);
    tdm_motion_rounds_set_window(mc, 64);
    tdm_motion_rounds_set_any(mc, 4);
    double q[100];
    cr_assert_eq(tdm_motion_rounds_next(mc, q), 4, "the first batch is the 4 probes");
    cr_assert_float_eq(q[0], 99.0, 1e-12);
    cr_assert_float_eq(q[1], 49.0, 1e-12); /* 100 states: the middle of 1 .. 98 */
    uint32_t col[100] = {1, 0, 0, 0};
    tdm_motion_rounds_take(mc, col, sizeof *col);
    cr_assert_eq(tdm_motion_rounds_next(mc, q), 0);
    cr_assert_eq(tdm_motion_rounds_answer(mc, 0), 99);
    tdm_motion_rounds_free(mc);
}
