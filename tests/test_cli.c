/* tools/: the `tandem` binary end to end (check, poses random, poses path, bad
 * inputs), run as a child process on files generated into a temporary folder.
 *
 * `tandem check` reads meshes through assimp, whose OBJ number parser is not
 * correctly rounded (a coordinate written with %.9g may come back one float ulp
 * off), so the brute-force answers are computed on the meshes as
 * tdm_mesh_load_file reads them back; those are first checked to be the
 * generated meshes, triangle for triangle, within an ulp. Poses are read back
 * with tdm_poses_read likewise (it normalises quaternions, as the tool does). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "brute.h"
#include "check.h"
#include "gen.h"
#include "spawn.h"
#include "tools/io.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN (the path of the tandem executable) must be defined by the build"
#endif


static uint64_t seed;
static char dir[256];

static void suite_init(void)
{
    seed = gen_seed(0xc11ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change), tandem at %s", (unsigned long long)seed, TANDEM_BIN);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tandem-cli-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

/* Every file a test creates is named here, so that fini can remove them all. */
static const char *const files[] = {"env.obj", "robot.obj", "poses.txt", "out.txt", "out2.txt", "out3.txt",
                                    "stdout",  "stderr",    "vol.cfg",   "empty.cfg", "path.txt", "bad.txt",
                                    "poses2.txt"};

static void suite_fini(void)
{
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

TestSuite(cli, .init = suite_init, .fini = suite_fini, .timeout = 120);

/* The full path of a file in the test's folder; the same name always gives the
 * same pointer, valid until the test ends. */
static const char *path(const char *name)
{
    static char names[32][32], paths[32][320];
    static int n;
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return paths[i];
    cr_assert(n < 32 && strlen(name) < 32);
    snprintf(names[n], sizeof names[n], "%s", name);
    snprintf(paths[n], sizeof paths[n], "%s/%s", dir, name);
    return paths[n++];
}

static char *slurp(const char *p)
{
    char *s = gen_read_file(p, NULL);
    cr_assert_not_null(s, "cannot read %s", p);
    return s;
}

typedef tdm_run_result run_result;

/* Runs `tandem args...` with stdout and stderr captured; status is the exit code
 * (or 128 + signal). */
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


/* Checks the summary line: the last line of stdout, exactly
 * queries=N seconds=S qps=Q colliding=C. */
static void check_summary(char *out, size_t n, size_t colliding, const char *what)
{
    char **v;
    size_t k = gen_split_lines(out, &v);
    cr_assert(k >= 1, "%s: no output on stdout", what);
    const char *last = v[k - 1];
    regex_t re;
    cr_assert_eq(regcomp(&re, "^queries=[0-9]+ seconds=[0-9.e+-]+ qps=[0-9.e+-]+ colliding=[0-9]+$", REG_EXTENDED |
                         REG_NOSUB), 0);
    int m = regexec(&re, last, 0, NULL, 0);
    regfree(&re);
    cr_assert_eq(m, 0, "%s: last stdout line does not match the summary format: '%s'", what, last);
    unsigned long long q, c;
    double sec, qps;
    cr_assert_eq(sscanf(last, "queries=%llu seconds=%lf qps=%lf colliding=%llu", &q, &sec, &qps, &c), 4);
    cr_assert_eq(q, n, "%s: queries=%llu, the pose file has %zu", what, q, n);
    cr_assert_eq(c, colliding, "%s: colliding=%llu, brute force %zu", what, c, colliding);
    cr_assert(sec >= 0 && qps >= 0, "%s: seconds %g qps %g", what, sec, qps);
    free(v);
}

/* Reads back what the tool will read and checks it is what was generated. */
static tdm_mesh *load_back(const char *p, const tdm_mesh *gen)
{
    tdm_mesh *m;
    char err[512];
    cr_assert_eq(tdm_mesh_load_file(p, TDM_ORIGIN_RAW, &m, err, sizeof err), TDM_OK, "loading %s: %s", p, err);
    cr_assert_eq(m->n_tris, gen->n_tris, "%s: %u triangles read back, %u written", p, m->n_tris, gen->n_tris);
    for (uint32_t t = 0; t < m->n_tris; t++)
        for (int k = 0; k < 3; k++) {
            tdm_dvec3 a = gen_vertex(gen, t, k), b = gen_vertex(m, t, k);
            double tol = 2 * 0x1p-23 * fmax(fabs(a.x), fmax(fabs(a.y), fabs(a.z)));
            CHECK(fabs(a.x - b.x) <= tol && fabs(a.y - b.y) <= tol && fabs(a.z - b.z) <= tol,
                  "%s: triangle %u vertex %d read back as (%.9g %.9g %.9g), written (%.9g %.9g %.9g)", p, t, k, b.x, b.y,
                  b.z, a.x, a.y, a.z);
        }
    return m;
}

/* A scene on disk plus the brute-force answers for it. */
typedef struct scene {
    size_t n;
    size_t *pairs;    /* per pose: intersecting pairs */
    size_t colliding; /* poses with at least one */
} scene;

static void make_scene(scene *s, size_t n)
{
    gen_rng r = {seed};
    tdm_mesh *env = gen_torus(1.5, 0.5, 32, 16), *robot = gen_sphere(0.6, 16);
    cr_assert(env && robot);
    cr_assert_eq(gen_write_obj(path("env.obj"), env), 0);
    cr_assert_eq(gen_write_obj(path("robot.obj"), robot), 0);
    gen_pose *poses = malloc(sizeof *poses * n);
    for (size_t i = 0; i < n; i++) poses[i] = gen_pose_in_ball(&r, tdm_d3(0, 0, 0), 2.3);
    cr_assert_eq(gen_write_poses(path("poses.txt"), poses, n), 0);

    tdm_mesh *e = load_back(path("env.obj"), env), *b = load_back(path("robot.obj"), robot);
    tdm_pose *rp;
    size_t rn;
    char err[512];
    cr_assert_eq(tdm_poses_read(path("poses.txt"), &rp, &rn, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(rn, n);
    brute bf;
    cr_assert_eq(brute_init(&bf, e, b), 0);
    s->n = n;
    s->pairs = malloc(sizeof *s->pairs * n);
    s->colliding = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(fabs(rp[i].t.x - poses[i].t.x) == 0 && fabs(rp[i].q.w - poses[i].q.w) < 1e-15, "pose %zu read back", i);
        tdm_xform x = tdm_xform_from_pose(rp[i].t, rp[i].q);
        s->pairs[i] = brute_run(&bf, &x);
        s->colliding += s->pairs[i] > 0;
    }
    cr_log_info("%zu poses, %zu colliding", n, s->colliding);
    if (n >= 100)
        cr_assert(s->colliding > n / 5 && s->colliding < 4 * n / 5, "the scene should mix colliding and free poses "
                  "(%zu of %zu collide)", s->colliding, n);
    brute_free(&bf);
    free(rp);
    free(poses);
    tdm_mesh_free(e);
    tdm_mesh_free(b);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* Compares an --out file, line by line, to the expected numbers. */
static void check_out_file(const char *p, const scene *s, const char *mode, uint32_t cap)
{
    char *text = slurp(p), **v;
    size_t k = gen_split_lines(text, &v);
    cr_assert_eq(k, s->n, "%s: %zu lines in --out, %zu poses", mode, k, s->n);
    for (size_t i = 0; i < k; i++) {
        size_t want = !strcmp(mode, "bool") ? (s->pairs[i] > 0) : (s->pairs[i] < cap ? s->pairs[i] : cap);
        char exp[32];
        snprintf(exp, sizeof exp, "%zu", want);
        CHECK(!strcmp(v[i], exp), "%s pose %zu: tandem wrote '%s', brute force %s (%zu pairs)", mode, i, v[i], exp,
              s->pairs[i]);
    }
    free(v);
    free(text);
}

Test(cli, check_bool_and_contacts_match_brute_force)
{
    scene s;
    make_scene(&s, 400);
    const char *bool_args[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                               path("poses.txt"), "--mode", "bool", "--out", path("out.txt"), NULL};
    run_result r = run(bool_args);
    cr_assert_eq(r.status, 0, "check --mode bool exited %d: %s", r.status, r.err);
    check_summary(r.out, s.n, s.colliding, "bool");
    check_out_file(path("out.txt"), &s, "bool", 0);
    run_free(&r);

    const char *contacts_args[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                                   path("poses.txt"), "--mode", "contacts", "--out", path("out2.txt"), NULL};
    r = run(contacts_args);
    cr_assert_eq(r.status, 0, "check --mode contacts exited %d: %s", r.status, r.err);
    check_summary(r.out, s.n, s.colliding, "contacts");
    check_out_file(path("out2.txt"), &s, "contacts", UINT32_MAX);
    run_free(&r);

    /* one thread and several give the same answers */
    const char *threads1[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                              path("poses.txt"), "--mode", "contacts", "--threads", "1", "--out", path("out3.txt"), NULL};
    r = run(threads1);
    cr_assert_eq(r.status, 0, "--threads 1 exited %d: %s", r.status, r.err);
    check_summary(r.out, s.n, s.colliding, "contacts, 1 thread");
    check_out_file(path("out3.txt"), &s, "contacts", UINT32_MAX);
    run_free(&r);

    /* a contact cap: counts stop at the cap, and stderr says so */
    size_t over = 0;
    for (size_t i = 0; i < s.n; i++) over += s.pairs[i] > 3;
    const char *capped[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                            path("poses.txt"), "--mode", "contacts", "--max-contacts", "3", "--threads", "3", "--out",
                            path("out3.txt"), NULL};
    r = run(capped);
    cr_assert_eq(r.status, 0, "--max-contacts 3 exited %d: %s", r.status, r.err);
    check_summary(r.out, s.n, s.colliding, "contacts, cap 3");
    check_out_file(path("out3.txt"), &s, "contacts", 3);
    cr_assert(over > 0, "the scene should have poses over the cap");
    cr_assert(strlen(r.err) > 0, "%zu poses over the cap, but nothing on stderr", over);
    run_free(&r);
    free(s.pairs);
}

Test(cli, check_without_out_prints_only_the_summary)
{
    scene s;
    make_scene(&s, 60);
    const char *args[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses", path("poses.txt"),
                          "--mode", "bool", NULL};
    run_result r = run(args);
    cr_assert_eq(r.status, 0, "exited %d: %s", r.status, r.err);
    check_summary(r.out, s.n, s.colliding, "bool without --out");
    run_free(&r);
    free(s.pairs);
}

/* ---- poses random ---------------------------------------------------------------- */

static void write_text(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Parses pose lines "x y z qx qy qz qw"; fails the test on anything else. */
static size_t parse_poses(char *text, tdm_pose **out)
{
    char **v;
    size_t n = gen_split_lines(text, &v);
    tdm_pose *p = malloc(sizeof *p * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        char extra;
        int k = sscanf(v[i], "%lf %lf %lf %lf %lf %lf %lf %c", &p[i].t.x, &p[i].t.y, &p[i].t.z, &p[i].q.x, &p[i].q.y,
                       &p[i].q.z, &p[i].q.w, &extra);
        CHECK(k == 7, "line %zu is not 7 numbers: '%s'", i + 1, v[i]);
    }
    free(v);
    *out = p;
    return n;
}

Test(cli, poses_random)
{
    write_text(path("vol.cfg"), "[problem]\nrobot = robot.dae\nvolume.min.x = -1\nvolume.min.y = 2\n"
                                "volume.min.z = -0.5\nvolume.max.x = 3\nvolume.max.y = 2.5\nvolume.max.z = 0.5\n");
    const double lo[3] = {-1, 2, -0.5}, hi[3] = {3, 2.5, 0.5};
    const char *a1[] = {"poses", "random", "--cfg", path("vol.cfg"), "--n", "2000", "--seed", "42", NULL};
    run_result r1 = run(a1), r2 = run(a1);
    cr_assert_eq(r1.status, 0, "poses random exited %d: %s", r1.status, r1.err);
    cr_assert_str_eq(r1.out, r2.out, "the same seed must give the same poses");
    const char *a3[] = {"poses", "random", "--cfg", path("vol.cfg"), "--n", "2000", "--seed", "43", NULL};
    run_result r3 = run(a3);
    cr_assert_eq(r3.status, 0);
    cr_assert_str_neq(r1.out, r3.out, "another seed must give other poses");
    const char *a4[] = {"poses", "random", "--cfg", path("vol.cfg"), "--n", "2000", "--seed", "42", "--out",
                        path("poses2.txt"), NULL};
    run_result r4 = run(a4);
    cr_assert_eq(r4.status, 0);
    char *file = slurp(path("poses2.txt"));
    cr_assert_str_eq(file, r1.out, "--out writes what stdout shows");
    free(file);

    tdm_pose *p;
    size_t n = parse_poses(r1.out, &p);
    cr_assert_eq(n, 2000, "%zu poses for --n 2000", n);
    double mean[3] = {0, 0, 0}, qmean[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        double t[3] = {p[i].t.x, p[i].t.y, p[i].t.z};
        for (int k = 0; k < 3; k++) {
            CHECK(t[k] >= lo[k] && t[k] <= hi[k], "pose %zu coordinate %d = %.17g outside [%g, %g]", i, k, t[k], lo[k],
                  hi[k]);
            mean[k] += t[k] / (double)n;
        }
        double qn = tdm_quat_norm(p[i].q);
        CHECK(fabs(qn - 1) < 1e-12, "pose %zu: |q| = %.17g", i, qn);
        qmean[0] += p[i].q.x / (double)n; qmean[1] += p[i].q.y / (double)n;
        qmean[2] += p[i].q.z / (double)n; qmean[3] += p[i].q.w / (double)n;
    }
    /* uniform: means near the centre (7 standard errors and more), components of q near 0 */
    for (int k = 0; k < 3; k++)
        cr_assert(fabs(mean[k] - (lo[k] + hi[k]) / 2) < 0.05 * (hi[k] - lo[k]), "mean of coordinate %d is %g", k,
                  mean[k]);
    for (int k = 0; k < 4; k++) cr_assert(fabs(qmean[k]) < 0.06, "mean of quaternion component %d is %g", k, qmean[k]);
    free(p);

    const char *zero[] = {"poses", "random", "--cfg", path("vol.cfg"), "--n", "0", "--seed", "1", NULL};
    run_result r5 = run(zero);
    cr_assert_eq(r5.status, 0);
    cr_assert_str_eq(r5.out, "", "--n 0 writes nothing");
    run_free(&r1); run_free(&r2); run_free(&r3); run_free(&r4); run_free(&r5);
}

/* ---- poses path ------------------------------------------------------------------- */

static double qdot(tdm_quat a, tdm_quat b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

/* Shoemake's slerp along the shorter arc, written out here as the reference. */
static tdm_quat ref_slerp(tdm_quat a, tdm_quat b, double s)
{
    double d = qdot(a, b);
    if (d < 0) { b.x = -b.x; b.y = -b.y; b.z = -b.z; b.w = -b.w; d = -d; }
    double th = acos(fmin(1, d)), wa = 1 - s, wb = s;
    if (th > 1e-6) { wa = sin((1 - s) * th) / sin(th); wb = sin(s * th) / sin(th); }
    tdm_quat q = {wa * a.x + wb * b.x, wa * a.y + wb * b.y, wa * a.z + wb * b.z, wa * a.w + wb * b.w};
    double n = tdm_quat_norm(q);
    q.x /= n; q.y /= n; q.z /= n; q.w /= n;
    return q;
}

Test(cli, poses_path)
{
    gen_rng r = {seed ^ 1};
    enum { W = 5, K = 7 };
    gen_pose w[W];
    for (int i = 0; i < W; i++) w[i] = gen_pose_in_box(&r, (double[3]){-2, -2, -2}, (double[3]){2, 2, 2});
    w[2].q = w[1].q; /* a segment with no rotation */
    w[3].q = (tdm_quat){-w[2].q.x, -w[2].q.y, -w[2].q.z, -w[2].q.w}; /* the same rotation, other sign */
    cr_assert_eq(gen_write_poses(path("path.txt"), w, W), 0);
    char ks[16];
    snprintf(ks, sizeof ks, "%d", K);
    const char *args[] = {"poses", "path", "--path", path("path.txt"), "--steps", ks, NULL};
    run_result res = run(args);
    cr_assert_eq(res.status, 0, "poses path exited %d: %s", res.status, res.err);
    tdm_pose *p;
    size_t n = parse_poses(res.out, &p);
    cr_assert_eq(n, (size_t)((W - 1) * K + 1), "%zu poses for %d waypoints and --steps %d: expected (W-1)*K+1", n, W, K);
    for (int i = 0; i < W - 1; i++)
        for (int j = 0; j < K; j++) {
            const tdm_pose *g = &p[i * K + j];
            double s = (double)j / K;
            tdm_dvec3 t = tdm_d3_add(w[i].t, tdm_d3_scale(tdm_d3_sub(w[i + 1].t, w[i].t), s));
            cr_assert(tdm_d3_len(tdm_d3_sub(g->t, t)) < 1e-12, "segment %d step %d: position off the line", i, j);
            tdm_quat q = ref_slerp(w[i].q, w[i + 1].q, s);
            double d = fabs(qdot(q, g->q)); /* q and -q are one rotation */
            double near = fabs(qdot(w[i].q, w[i + 1].q)) > 0.9995 ? 1e-6 : 1e-12;
            cr_assert(d > 1 - near, "segment %d step %d: rotation is not the slerp (|dot| = %.17g)", i, j, d);
            cr_assert(fabs(tdm_quat_norm(g->q) - 1) < 1e-12, "segment %d step %d: |q| = %.17g", i, j,
                      tdm_quat_norm(g->q));
        }
    /* each segment starts at its first waypoint; the last pose is the last waypoint */
    for (int i = 0; i < W; i++) {
        const tdm_pose *g = &p[i == W - 1 ? n - 1 : (size_t)(i * K)];
        cr_assert(tdm_d3_len(tdm_d3_sub(g->t, w[i].t)) < 1e-15 * (1 + tdm_d3_len(w[i].t)),
                  "pose of waypoint %d: position (%.17g %.17g %.17g), waypoint (%.17g %.17g %.17g)", i, g->t.x, g->t.y,
                  g->t.z, w[i].t.x, w[i].t.y, w[i].t.z);
        cr_assert(fabs(fabs(qdot(g->q, w[i].q)) - 1) < 1e-14, "pose of waypoint %d: rotation differs", i);
    }
    free(p);
    run_free(&res);

    /* --steps 1: the waypoints themselves; one waypoint: itself */
    const char *one[] = {"poses", "path", "--path", path("path.txt"), "--steps", "1", NULL};
    res = run(one);
    cr_assert_eq(res.status, 0);
    n = parse_poses(res.out, &p);
    cr_assert_eq(n, (size_t)W);
    free(p);
    run_free(&res);
    cr_assert_eq(gen_write_poses(path("path.txt"), w, 1), 0);
    const char *single[] = {"poses", "path", "--path", path("path.txt"), "--steps", "5", NULL};
    res = run(single);
    cr_assert_eq(res.status, 0);
    n = parse_poses(res.out, &p);
    cr_assert_eq(n, 1, "one waypoint gives one pose, got %zu", n);
    free(p);
    run_free(&res);
}

/* ---- bad inputs ---------------------------------------------------------------------- */

/* The command must fail with a message on stderr and no summary line. */
static void expect_failure(const char *const *args, const char *what, const char *in_message)
{
    run_result r = run(args);
    cr_assert_neq(r.status, 0, "%s: exit status 0", what);
    cr_assert(r.status < 128, "%s: killed by signal %d", what, r.status - 128);
    cr_assert(strlen(r.err) > 0, "%s: nothing on stderr", what);
    cr_assert(strstr(r.out, "queries=") == NULL, "%s: a summary line was printed: %s", what, r.out);
    if (in_message)
        cr_assert(strstr(r.err, in_message) != NULL, "%s: stderr should mention '%s': %s", what, in_message, r.err);
    run_free(&r);
}

Test(cli, bad_inputs_fail_with_a_message)
{
    scene s;
    make_scene(&s, 30);
    free(s.pairs);
    const char *missing_env[] = {"check", "--env", path("nope.obj"), "--robot", path("robot.obj"), "--poses",
                                 path("poses.txt"), "--mode", "bool", NULL};
    expect_failure(missing_env, "missing environment file", "nope.obj");
    const char *missing_poses[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                                   path("nope.txt"), "--mode", "bool", NULL};
    expect_failure(missing_poses, "missing pose file", "nope.txt");

    write_text(path("bad.txt"), "0 0 0 0 0 0 1\n1 2 nan 0 0 0 1\n");
    const char *nan_pose[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                              path("bad.txt"), "--mode", "bool", NULL};
    expect_failure(nan_pose, "NaN in a pose", "bad.txt");
    write_text(path("bad.txt"), "0 0 0 0 0 0 1\n\n# comment\n1 2 3 0 0 0 2\n");
    expect_failure(nan_pose, "quaternion of norm 2", ":4");
    write_text(path("bad.txt"), "0 0 0 0 0 0 1\n1 2 3 0 0 1\n");
    expect_failure(nan_pose, "six numbers on a line", ":2");
    write_text(path("bad.txt"), "0 0 0 0 0 0 inf\n");
    expect_failure(nan_pose, "infinite quaternion component", NULL);

    const char *bad_mode[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                              path("poses.txt"), "--mode", "maybe", NULL};
    expect_failure(bad_mode, "unknown mode", "maybe");
    const char *no_mode[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                             path("poses.txt"), NULL};
    expect_failure(no_mode, "missing --mode", NULL);
    const char *unknown[] = {"check", "--bogus", "1", NULL};
    expect_failure(unknown, "unknown option", "--bogus");
    const char *bad_threads[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses",
                                 path("poses.txt"), "--mode", "bool", "--threads", "-3", NULL};
    expect_failure(bad_threads, "negative thread count", NULL);
    const char *no_cmd[] = {"frobnicate", NULL};
    expect_failure(no_cmd, "unknown command", NULL);

    const char *missing_cfg[] = {"poses", "random", "--cfg", path("nope.cfg"), "--n", "3", "--seed", "1", NULL};
    expect_failure(missing_cfg, "missing cfg file", "nope.cfg");
    write_text(path("empty.cfg"), "volume.min.x = -1\nvolume.max.x = 1\n");
    const char *partial_cfg[] = {"poses", "random", "--cfg", path("empty.cfg"), "--n", "3", "--seed", "1", NULL};
    expect_failure(partial_cfg, "cfg without y and z bounds", NULL);
    const char *bad_n[] = {"poses", "random", "--cfg", path("empty.cfg"), "--n", "many", "--seed", "1", NULL};
    expect_failure(bad_n, "--n not a number", NULL);
    write_text(path("bad.txt"), "0 0 0 0 0 0 1\nnan 0 0 0 0 0 1\n");
    const char *bad_path[] = {"poses", "path", "--path", path("bad.txt"), "--steps", "4", NULL};
    expect_failure(bad_path, "NaN waypoint", "bad.txt");
    write_text(path("bad.txt"), "0 0 0 0 0 0 1\n1 1 1 0 0 0 1\n");
    const char *zero_steps[] = {"poses", "path", "--path", path("bad.txt"), "--steps", "0", NULL};
    expect_failure(zero_steps, "--steps 0", NULL);
}

/* ---- --version and CMD --help ----------------------------------------------------- */

Test(cli, version_and_command_help)
{
    const char *version[] = {"--version", NULL};
    run_result r = run(version);
    cr_assert_eq(r.status, 0, "--version exited %d: %s", r.status, r.err);
    cr_assert(strcmp(r.out, "tandem 0.1.0 (protocol 1)\n") == 0, "--version printed '%s'", r.out);
    run_free(&r);

    /* a command's help: its blocks of the usage text, on stdout, exit 0, and nothing else */
    const char *check_help[] = {"check", "--help", NULL};
    r = run(check_help);
    cr_assert_eq(r.status, 0, "check --help exited %d: %s", r.status, r.err);
    cr_assert(strstr(r.out, "  check --env ENV") && strstr(r.out, "  check --urdf URDF"), "check --help: '%s'", r.out);
    cr_assert(!strstr(r.out, "mesh put") && !strstr(r.out, "usage:"), "check --help shows other commands: '%s'", r.out);
    run_free(&r);

    const char *robot_help[] = {"robot", "put", "-h", NULL}; /* after a subcommand too */
    r = run(robot_help);
    cr_assert_eq(r.status, 0, "robot put -h exited %d: %s", r.status, r.err);
    cr_assert(strstr(r.out, "  robot joints") && strstr(r.out, "  robot put") && strstr(r.out, "  robot rm"),
              "robot -h: '%s'", r.out);
    cr_assert(!strstr(r.out, "  motions "), "robot -h shows motions: '%s'", r.out);
    run_free(&r);

    /* an unknown command is still a usage error, --help or not */
    const char *bad[] = {"nonsense", "--help", NULL};
    r = run(bad);
    cr_assert_eq(r.status, 2, "unknown command with --help: exit %d", r.status);
    cr_assert(strstr(r.err, "unknown command 'nonsense'") && strstr(r.err, "usage: tandem"), "'%s'", r.err);
    run_free(&r);
}

/* An --out that cannot be written names the file and the system's reason (issue 14,
 * point 10). */
Test(cli, out_errors_carry_the_reason)
{
    scene s;
    make_scene(&s, 10);
    const char *out = path("no-such-folder/answers.txt");
    const char *args[] = {"check", "--env", path("env.obj"), "--robot", path("robot.obj"), "--poses", path("poses.txt"),
                          "--mode", "bool", "--out", out, NULL};
    run_result r = run(args);
    cr_assert_eq(r.status, 1, "exited %d: %s", r.status, r.err);
    char want[600];
    snprintf(want, sizeof want, "cannot write %s: %s", out, strerror(ENOENT));
    cr_assert(strstr(r.err, want) != NULL, "stderr '%s' should contain '%s'", r.err, want);
    run_free(&r);
    free(s.pairs);
}
