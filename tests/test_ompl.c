/* examples/ompl's ompl_plan (OMPL planners over Tandem, issue 13 point 9), run as a
 * child process against a real tandemd (CPU engine) and with its in-process FCL
 * checker, on a problem the suite writes itself: a two-joint arm (box links) whose
 * bar must swing over a post to get from the start to the goal (the straight
 * motion hits it), in MBM's layout (a scenario folder with sceneNNNN.yaml and
 * requestNNNN.yaml). A second problem starts in collision and must be reported
 * unsolved.
 *
 * Every returned path (--path-out) is checked here by an oracle independent of
 * robot/, the engines and FCL (tests/arm_oracle.h); every segment is cut into
 * states with the formula (n = max(2, ceil(max_j |b_j - a_j| / R) + 1)) at
 * the resolution the planner used, so that planner and oracle check the same
 * states.
 *
 * Shared scenes: problems whose scene files are identical share one stored robot
 * scene (one content id); run by several planners at once, each problem is solved or
 * not exactly as with one planner, and afterwards tandemd holds no scene but one
 * stored before the run (this run did not create it, so it must stay). A scene the
 * server refuses fails its problems alone. Built only when OMPL is present
 * (tests/CMakeLists.txt). */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include "arm_oracle.h"
#include "daemon_util.h"
#include "gen.h"
#include "spawn.h"

#ifndef OMPL_PLAN_BIN
#error "OMPL_PLAN_BIN (the path of the ompl_plan executable) must be defined by the build"
#endif

static dmn D;

static const char *path(const char *name)
{
    static char buf[16][600];
    static int k;
    char *p = buf[k++ % 16];
    snprintf(p, 600, "%s/%s", D.root, name);
    return p;
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "w");
    cr_assert_not_null(f, "cannot write %s", path(name));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Problem 1: the bar level at -0.8 rad to level at +0.8 rad (the post in between). */
static const double START1[2] = {-0.8, 0.0}, GOAL1[2] = {0.8, 0.0};
static const char *request1 = "start_state:\n"
                              "  joint_state:\n"
                              "    name: [j1, j2]\n"
                              "    position: [-0.8, 0]\n"
                              "goal_constraints:\n"
                              "  - joint_constraints:\n"
                              "      - {joint_name: j1, position: 0.8}\n"
                              "      - {joint_name: j2, position: 0}\n"
                              "group_name: arm\n";
/* Problem 2: the bar hanging straight down into the base slab. */
static const char *request2 = "start_state:\n"
                              "  joint_state:\n"
                              "    name: [j1, j2]\n"
                              "    position: [0, 1.5707963]\n"
                              "goal_constraints:\n"
                              "  - joint_constraints:\n"
                              "      - {joint_name: j1, position: 0.8}\n"
                              "      - {joint_name: j2, position: 0}\n"
                              "group_name: arm\n";

#define RES 0.005
#define RES_S "0.005"

static void suite_init(void)
{
    dmn_init(&D, "ompl");
    cr_assert_eq(mkdir(path("arm_problems"), 0700), 0, "%s", strerror(errno));
    cr_assert_eq(mkdir(path("paths"), 0700), 0, "%s", strerror(errno));
    write_file("arm.urdf", arm_urdf_text);
    write_file("arm.srdf", arm_srdf_text);
    write_file("arm_problems/scene0001.yaml", arm_scene_text);
    write_file("arm_problems/request0001.yaml", request1);
    write_file("arm_problems/scene0002.yaml", arm_scene_text);
    write_file("arm_problems/request0002.yaml", request2);
}

static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(ompl, .init = suite_init, .fini = suite_fini, .timeout = 240);

Test(ompl, oracle_sees_the_problems)
{
    /* the oracle itself, on states whose answer is plain from the geometry */
    cr_assert_eq(arm_oracle_collides(START1), 0);
    cr_assert_eq(arm_oracle_collides(GOAL1), 0);
    const double level_at_post[2] = {atan2(0.1, 0.45), 0}, lifted[2] = {atan2(0.1, 0.45), -1.2},
                 down[2] = {0, 1.5707963}, far_side[2] = {3.0, 0};
    cr_assert_eq(arm_oracle_collides(level_at_post), 1, "the level bar pointing at the post");
    cr_assert_eq(arm_oracle_collides(lifted), 0, "the lifted bar above the post");
    cr_assert_eq(arm_oracle_collides(down), 1, "the bar hanging into the base");
    cr_assert_eq(arm_oracle_collides(far_side), 0);
    cr_assert(arm_oracle_motion(START1, GOAL1, RES, NULL) > 0, "the straight motion must hit the post");
}

/* ---- ompl_plan ---- */

static tdm_run_result run(const char *const *args)
{
    char o[PATH_MAX], e[PATH_MAX];
    snprintf(o, sizeof o, "%s", path("stdout"));
    snprintf(e, sizeof e, "%s", path("stderr"));
    tdm_run_result r;
    int rc = tdm_run_capture(OMPL_PLAN_BIN, args, o, e, &r);
    cr_assert_eq(rc, 0, "cannot run %s: %s", OMPL_PLAN_BIN, strerror(rc));
    return r;
}

/* Reads paths/arm_problems_0001.path: J = 2 values a line; checks its ends and
 * every segment with the oracle; returns the number of states. */
static size_t check_path(void)
{
    char *text = gen_read_file(path("paths/arm_problems_0001.path"), NULL);
    cr_assert_not_null(text, "no path written for problem 0001");
    char **lines;
    size_t n = gen_split_lines(text, &lines);
    cr_assert(n >= 3, "a path of %zu states cannot go around the post", n);
    double (*q)[2] = malloc(n * sizeof *q);
    for (size_t i = 0; i < n; i++) {
        char tail;
        cr_assert_eq(sscanf(lines[i], "%lf %lf %c", &q[i][0], &q[i][1], &tail), 2, "path line %zu: '%s'", i + 1,
                     lines[i]);
    }
    for (int j = 0; j < 2; j++) {
        cr_assert_float_eq(q[0][j], START1[j], 1e-12, "start joint %d", j);
        cr_assert_float_eq(q[n - 1][j], GOAL1[j], 1e-12, "goal joint %d", j);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        long k = arm_oracle_motion(q[i], q[i + 1], RES, NULL);
        cr_assert_eq(k, -1, "segment %zu (%g %g -> %g %g) collides at state %ld", i, q[i][0], q[i][1], q[i + 1][0],
                     q[i + 1][1], k);
    }
    free(q);
    free(lines);
    free(text);
    return n;
}

static char summary[4096]; /* solve_and_check's last summary line */

/* Runs ompl_plan with the given checker arguments on both problems; checks the two
 * output lines, the summary, and problem 1's path. */
static void solve_and_check(const char *const *extra)
{
    unlink(path("paths/arm_problems_0001.path"));
    const char *args[40] = {"--urdf", path("arm.urdf"), "--srdf", path("arm.srdf"), "--resolution", RES_S,
                            "--recheck-resolution", RES_S, "--time-limit", "30", "--seed", "7", "--path-out",
                            path("paths")};
    size_t k = 14;
    for (size_t i = 0; extra[i]; i++) args[k++] = extra[i];
    args[k++] = path("arm_problems");
    args[k] = NULL;
    tdm_run_result r = run(args);
    cr_assert_eq(r.status, 0, "ompl_plan failed (%d): %s", r.status, r.err);
    char **lines;
    size_t n = gen_split_lines(r.out, &lines);
    cr_assert_eq(n, 3, "stdout: %s", r.out);
    char scen[64], prob[16];
    int solved;
    double secs;
    unsigned long states, checks;
    char tail;
    cr_assert_eq(sscanf(lines[0], "%63s %15s %d %lf %lu %lu %c", scen, prob, &solved, &secs, &states, &checks, &tail), 6,
                 "line 1: %s", lines[0]);
    cr_assert_str_eq(scen, "arm_problems");
    cr_assert_str_eq(prob, "0001");
    cr_assert_eq(solved, 1, "problem 0001 unsolved: %s", r.err);
    cr_assert(secs > 0 && secs < 30);
    cr_assert(checks > 0);
    size_t path_states = check_path();
    cr_assert_eq(states, path_states, "path_states %lu, the path file has %zu", states, path_states);
    cr_assert_eq(sscanf(lines[1], "%63s %15s %d %lf %lu %lu %c", scen, prob, &solved, &secs, &states, &checks, &tail), 6,
                 "line 2: %s", lines[1]);
    cr_assert_str_eq(prob, "0002");
    cr_assert_eq(solved, 0, "problem 0002 starts in collision and cannot be solved");
    cr_assert_eq(states, 0);
    cr_assert(strstr(lines[2], "problems=2 solved=1 recheck_failed=0 errors=0 ") == lines[2], "summary: %s",
              lines[2]);
    snprintf(summary, sizeof summary, "%s", lines[2]);
    free(lines);
    tdm_run_free(&r);
}

Test(ompl, rrtconnect_through_tandemd)
{
    const char *const flags[] = {"--engine", "cpu", NULL};
    dmn_start(&D, flags);
    const char *const extra[] = {"--checker", "tandem", "--server", D.tcp_addr, "--planner", "rrtconnect", NULL};
    solve_and_check(extra);
    /* by default a planner's lone states are answered by libtandem's local engine */
    cr_assert(strstr(summary, " local_states=1 local_probes=0"), "summary: %s", summary);
    /* two planners at once, each with its own connection */
    const char *const two[] = {"--checker", "tandem", "--server", D.unix_addr, "--planners", "2", NULL};
    solve_and_check(two);
    /* every state through tandemd */
    const char *const remote[] = {"--checker", "tandem", "--server", D.unix_addr, "--local-states", "0", NULL};
    solve_and_check(remote);
    cr_assert_null(strstr(summary, "local_states="), "summary: %s", summary);
}

Test(ompl, rrtconnect_fcl_in_process)
{
    const char *const extra[] = {"--checker", "fcl", "--planner", "rrtconnect", NULL};
    solve_and_check(extra);
}

/* rrt_fused.h: one motion check per goal-tree extension; the same problems, the same checks of
   the path and of the start in collision, with either checker */
Test(ompl, rrtconnect_fused_through_tandemd_and_fcl)
{
    const char *const flags[] = {"--engine", "cpu", NULL};
    dmn_start(&D, flags);
    const char *const tandem[] = {"--checker", "tandem", "--server", D.unix_addr, "--planner", "rrtconnect-fused",
                                  NULL};
    solve_and_check(tandem);
    const char *const fcl[] = {"--checker", "fcl", "--planner", "rrtconnect-fused", NULL};
    solve_and_check(fcl);
}

Test(ompl, batched_roadmap_through_tandemd)
{
    const char *const flags[] = {"--engine", "cpu", NULL};
    dmn_start(&D, flags);
    const char *const extra[] = {"--checker", "tandem", "--server", D.unix_addr, "--planner", "prm",
                                 "--prm-samples", "300", NULL};
    solve_and_check(extra);
}

Test(ompl, batched_roadmap_fcl_threads)
{
    const char *const extra[] = {"--checker", "fcl", "--fcl-threads", "2", "--planner", "prm", "--prm-samples",
                                 "300", "--nn-threads", "3", NULL};
    solve_and_check(extra);
}

Test(ompl, bad_input)
{
    const char *const no_urdf[] = {path("arm_problems"), NULL};
    tdm_run_result r = run(no_urdf);
    cr_assert_eq(r.status, 2, "no --urdf: usage error");
    tdm_run_free(&r);
    const char *const bad_planner[] = {"--urdf", path("arm.urdf"), "--planner", "rrt", path("arm_problems"), NULL};
    r = run(bad_planner);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--planner") != NULL, "stderr: %s", r.err);
    tdm_run_free(&r);
    const char *const bad_nn[] = {"--urdf", path("arm.urdf"), "--nn-threads", "0", path("arm_problems"), NULL};
    r = run(bad_nn);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "bad value for --nn-threads: '0'") != NULL, "stderr: %s", r.err);
    tdm_run_free(&r);
    const char *const missing[] = {"--urdf", path("arm.urdf"), "--checker", "fcl", path("nowhere"), NULL};
    r = run(missing);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "nowhere: no such file or folder") != NULL, "stderr: %s", r.err);
    tdm_run_free(&r);
    /* a goal naming a joint the robot does not have, a start outside the limits: that problem
     * fails (exit 1), named with its file and joint; the others run */
    cr_assert_eq(mkdir(path("bad_problems"), 0700), 0, "%s", strerror(errno));
    write_file("bad_problems/scene0001.yaml", arm_scene_text);
    write_file("bad_problems/scene0002.yaml", arm_scene_text);
    write_file("bad_problems/scene0003.yaml", arm_scene_text);
    write_file("bad_problems/request0001.yaml", "start_state: {joint_state: {name: [j1, j2], position: [-0.8, 0]}}\n"
                                                "goal_constraints:\n  - joint_constraints:\n"
                                                "      - {joint_name: j9, position: 0.8}\n");
    write_file("bad_problems/request0002.yaml", "start_state: {joint_state: {name: [j1, j2], position: [4.0, 0]}}\n"
                                                "goal_constraints:\n  - joint_constraints:\n"
                                                "      - {joint_name: j1, position: 0.8}\n");
    write_file("bad_problems/request0003.yaml", request1);
    const char *const bad_req[] = {"--urdf", path("arm.urdf"), "--srdf", path("arm.srdf"), "--checker", "fcl",
                                   "--resolution", RES_S, "--recheck-resolution", RES_S, path("bad_problems"), NULL};
    r = run(bad_req);
    cr_assert_eq(r.status, 1, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "request0001.yaml: goal_constraints[0]: joint 'j9' is not an active joint of the robot"),
              "stderr: %s", r.err);
    cr_assert(strstr(r.err, "request0002.yaml: start of joint 'j1' (4.000000) is outside its limits [-3.140000, 3.140000]"),
              "stderr: %s", r.err);
    cr_assert(strstr(r.out, "bad_problems 0001 0 ") && strstr(r.out, "bad_problems 0002 0 ") &&
              strstr(r.out, "bad_problems 0003 1 "), "stdout: %s", r.out);
    cr_assert(strstr(r.out, "problems=3 solved=1 recheck_failed=0 errors=2 "), "stdout: %s", r.out);
    tdm_run_free(&r);
    /* a server that is not there: exit 1, naming it */
    const char *const no_server[] = {"--urdf", path("arm.urdf"), "--server", "unix:/nonexistent/tandemd.sock",
                                     path("arm_problems"), NULL};
    r = run(no_server);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "cannot connect to unix:/nonexistent/tandemd.sock") != NULL, "stderr: %s", r.err);
    tdm_run_free(&r);
}

/* ---- shared scenes ---- */

/* The scenes tandemd holds now. */
static size_t scene_list(const char *addr, uint8_t first_id[TDM_ID_BYTES])
{
    tdm_client *c = tdm_client_connect(addr, 10000);
    cr_assert(c && !tdm_client_err(c), "connect: %s", c ? tdm_client_errstr(c) : "out of memory");
    tdm_scene_info *list = NULL;
    size_t n = 0;
    cr_assert_eq(tdm_scene_list(c, &list, &n), 0, "scene list: %s", tdm_client_errstr(c));
    if (n && first_id) memcpy(first_id, list[0].scene_id, TDM_ID_BYTES);
    tdm_scene_list_free(list);
    tdm_client_free(c);
    return n;
}

/* Runs ompl_plan (RRTConnect through tandemd) with P planners on folder; returns the
 * solved column of its n problem lines as a string of 0s and 1s (out: room for n + 1),
 * and its exit status. */
static int run_planners(const char *folder, const char *planners, size_t n, char *out, char *summary, size_t cap)
{
    const char *const args[] = {"--urdf", path("arm.urdf"), "--srdf", path("arm.srdf"), "--resolution", RES_S,
                                "--recheck-resolution", RES_S, "--time-limit", "30", "--checker", "tandem",
                                "--server", D.unix_addr, "--planners", planners, path(folder), NULL};
    tdm_run_result r = run(args);
    char **lines;
    size_t k = gen_split_lines(r.out, &lines);
    cr_assert_eq(k, n + 1, "%s planners: stdout: %s\nstderr: %s", planners, r.out, r.err);
    for (size_t i = 0; i < n; i++) {
        char scen[64], prob[16], want[16];
        int solved;
        cr_assert_eq(sscanf(lines[i], "%63s %15s %d", scen, prob, &solved), 3, "line %zu: %s", i + 1, lines[i]);
        snprintf(want, sizeof want, "%04zu", i + 1);
        cr_assert_str_eq(prob, want, "line %zu: %s", i + 1, lines[i]);
        out[i] = solved ? '1' : '0';
    }
    out[n] = 0;
    snprintf(summary, cap, "%s", lines[n]);
    int status = r.status;
    free(lines);
    tdm_run_free(&r);
    return status;
}

Test(ompl, planners_share_identical_scenes)
{
    /* eight problems: 1-5 one scene file's bytes, 6-8 another's (the same world with a
     * comment: other bytes, another id); odd ones solvable, even ones start in collision */
    cr_assert_eq(mkdir(path("shared"), 0700), 0, "%s", strerror(errno));
    const size_t n = 8;
    char other[4096];
    snprintf(other, sizeof other, "%s# the same world, other bytes\n", arm_scene_text);
    for (size_t i = 1; i <= n; i++) {
        char sc[64], rq[64];
        snprintf(sc, sizeof sc, "shared/scene%04zu.yaml", i);
        snprintf(rq, sizeof rq, "shared/request%04zu.yaml", i);
        write_file(sc, i <= 5 ? arm_scene_text : other);
        write_file(rq, i % 2 ? request1 : request2);
    }
    const char *const flags[] = {"--engine", "cpu", NULL};
    dmn_start(&D, flags);
    char one[16], many[16], summary[512];
    cr_assert_eq(run_planners("shared", "1", n, one, summary, sizeof summary), 0, "%s", summary);
    cr_assert_str_eq(one, "10101010", "one planner: solved %s", one);
    cr_assert(strstr(summary, "problems=8 solved=4 recheck_failed=0 errors=0 ") == summary, "%s", summary);
    cr_assert_eq(scene_list(D.unix_addr, NULL), 0, "one planner: scenes left in tandemd");
    const char *const counts[] = {"3", "8", "16"};
    for (size_t c = 0; c < 3; c++) {
        cr_assert_eq(run_planners("shared", counts[c], n, many, summary, sizeof summary), 0, "%s", summary);
        cr_assert_str_eq(many, one, "%s planners: solved %s, one planner %s", counts[c], many, one);
        cr_assert(strstr(summary, "problems=8 solved=4 recheck_failed=0 errors=0 ") == summary, "%s", summary);
        cr_assert_eq(scene_list(D.unix_addr, NULL), 0, "%s planners: scenes left in tandemd", counts[c]);
    }
    /* a scene stored before the run is this run's to use, not to delete */
    tdm_client *c = tdm_client_connect(D.unix_addr, 10000);
    cr_assert(c && !tdm_client_err(c));
    uint8_t robot_id[TDM_ID_BYTES], kept[TDM_ID_BYTES], listed[TDM_ID_BYTES];
    cr_assert_eq(tdm_robot_put_files(c, NULL, path("arm.urdf"), path("arm.srdf"), robot_id, NULL, NULL), 0, "%s",
                 tdm_client_errstr(c));
    int created = 0;
    cr_assert_eq(tdm_robot_scene_put_file(c, "kept", robot_id, path("shared/scene0006.yaml"), kept, &created, NULL), 0,
                 "%s", tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    cr_assert_eq(run_planners("shared", "8", n, many, summary, sizeof summary), 0, "%s", summary);
    cr_assert_str_eq(many, one);
    cr_assert_eq(scene_list(D.unix_addr, listed), 1, "the scene stored before the run, alone");
    cr_assert_eq(memcmp(listed, kept, TDM_ID_BYTES), 0, "the scene left is not the one stored before the run");
    cr_assert_eq(tdm_scene_delete(c, kept), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
}

Test(ompl, refused_scene_fails_its_problems_alone)
{
    /* problems 2, 3 and 5 share a scene over the server's max_robot_text_bytes (a long
     * comment): each of their planners' puts fails; the others solve; nothing is left */
    cr_assert_eq(mkdir(path("refused"), 0700), 0, "%s", strerror(errno));
    const size_t n = 6;
    size_t big_len = strlen(arm_scene_text) + 20000;
    char *big = malloc(big_len + 8);
    cr_assert_not_null(big);
    strcpy(big, arm_scene_text);
    strcat(big, "# ");
    memset(big + strlen(big), 'x', 20000);
    strcpy(big + strlen(arm_scene_text) + 2 + 20000, "\n");
    for (size_t i = 1; i <= n; i++) {
        char sc[64], rq[64];
        snprintf(sc, sizeof sc, "refused/scene%04zu.yaml", i);
        snprintf(rq, sizeof rq, "refused/request%04zu.yaml", i);
        write_file(sc, i == 2 || i == 3 || i == 5 ? big : arm_scene_text);
        write_file(rq, request1);
    }
    free(big);
    const char *const flags[] = {"--engine", "cpu", "--max-robot-text-bytes", "16384", NULL};
    dmn_start(&D, flags);
    char solved[16], summary[512];
    cr_assert_eq(run_planners("refused", "6", n, solved, summary, sizeof summary), 1, "%s", summary);
    cr_assert_str_eq(solved, "100101");
    cr_assert(strstr(summary, "problems=6 solved=3 recheck_failed=0 errors=3 ") == summary, "%s", summary);
    cr_assert_eq(scene_list(D.unix_addr, NULL), 0, "scenes left in tandemd");
    char *log = gen_read_file(path("stderr"), NULL);
    cr_assert_not_null(log);
    for (size_t i = 2; i <= 5; i += i == 3 ? 2 : 1) {
        char want[200];
        snprintf(want, sizeof want, "refused/scene%04zu.yaml: tandemd: ", i);
        cr_assert(strstr(log, want) && strstr(log, "max_robot_text_bytes"), "no error for scene %zu: %s", i, log);
    }
    free(log);
}
