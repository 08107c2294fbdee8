/* BVTT fronts against descents from the roots on a robot's motions (issue 13,
 * point 5): does reusing the previous state's front (workpile/bvtt_front.h) beat
 * tdm_collide per state?
 *
 *   bench_fronts --urdf URDF [--srdf SRDF] --world SCENE.yaml --motions FILE --resolution R
 *                [--all-states] [--repeat N] [--prune-every K]
 *
 * FILE: one motion a line, 2 J numbers (start, then end), as `tandem motions`
 * reads it. Each motion is cut into states (robot/motions.h); at each state the
 * scene's checked pairs that culling keeps (tdm_scene_cull, the scheduler's own
 * test) are the tasks, B placed in A's frame as the
 * scheduler places it. By default each motion stops at its first colliding
 * state, as a motion check does (found here first, with tdm_collide);
 * --all-states checks every state. A (motion, checked pair) is a sequence: its
 * kept states in order.
 *
 * Timed, single thread, on the same precomputed transforms: (a) tdm_collide on
 * every task; (b) one tdm_front per sequence (reset at the sequence's start, its
 * memory reused), tdm_front_collide on its tasks in order. Every task's answer
 * (colliding, first pair) must agree, or the run fails. Each method runs once
 * untimed over everything (warm caches, the front's memory grown); then, N
 * times, every block of whole sequences (BLOCK_TASKS) is timed for both
 * methods back to back, in alternating order; each method's time is the sum
 * over blocks of its best time (see BLOCK_TASKS). Prints one Markdown table row:
 *
 *   | motions | states | tasks | at root | box/task a | box/task b | tri/task a | tri/task b | front pairs | ns/task a | ns/task b | ns/state a | ns/state b | b/a |
 *
 * (states: motion states checked; at root: the share of tasks whose descent
 * from the roots stops at the root pair (one box test); front pairs: mean front
 * size after a check; b/a: time of (b) over time of (a).) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "geom/primitive.h"
#include "robot/motions.h"
#include "robot/planning_scene.h"
#include "robot/robot_scene.h"
#include "robot/urdf.h"
#include "tools/io.h"
#include "workpile/bvtt_front.h"
#include "workpile/cpu_engine.h"

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "bench_fronts: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(1);
}

static int load_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    (void)ctx;
    return tdm_mesh_load_file(path, TDM_ORIGIN_RAW, out, err, errlen);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Lines of exactly `count` numbers ('#' lines and blank lines skipped). */
static double *read_records(const char *path, size_t count, size_t *n_out)
{
    FILE *f = fopen(path, "r");
    if (!f) die("cannot read %s", path);
    size_t n = 0, cap = 0;
    double *v = NULL;
    char *line = NULL;
    size_t len = 0;
    while (getline(&line, &len, f) > 0) {
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#' || *s == '\n' || *s == 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            v = realloc(v, sizeof *v * cap * count);
            if (!v) die("out of memory%s", "");
        }
        for (size_t k = 0; k < count; k++) {
            char *end;
            v[n * count + k] = strtod(s, &end);
            if (end == s) die("%s: a line with too few numbers", path);
            s = end;
        }
        n++;
    }
    free(line);
    fclose(f);
    *n_out = n;
    return v;
}

typedef struct seq { size_t first, n; } seq; /* tasks first .. first + n - 1 of one (motion, pair) */

typedef struct work {
    tdm_task *tasks;
    size_t n_tasks, cap_tasks;
    seq *seqs;
    size_t n_seqs, cap_seqs;
} work;

static void push_task(work *w, const tdm_task *t)
{
    if (w->n_tasks == w->cap_tasks) {
        w->cap_tasks = w->cap_tasks ? 2 * w->cap_tasks : 4096;
        w->tasks = realloc(w->tasks, sizeof *w->tasks * w->cap_tasks);
        if (!w->tasks) die("out of memory%s", "");
    }
    w->tasks[w->n_tasks++] = *t;
}

static void push_seq(work *w, size_t first, size_t n)
{
    if (n == 0) return;
    if (w->n_seqs == w->cap_seqs) {
        w->cap_seqs = w->cap_seqs ? 2 * w->cap_seqs : 1024;
        w->seqs = realloc(w->seqs, sizeof *w->seqs * w->cap_seqs);
        if (!w->seqs) die("out of memory%s", "");
    }
    w->seqs[w->n_seqs++] = (seq){first, n};
}

/* Is check k kept at a state whose culling bits (tdm_scene_cull) are these? */
static int kept(const uint64_t *bits, uint32_t k) { return (int)(bits[k / 64] >> (k % 64) & 1); }

/* The task of check k at these poses, as sched.c's pair_of places it. */
static tdm_task task_of(const tdm_scene *s, uint32_t k, const tdm_xform *poses)
{
    const tdm_scene_check *c = &s->checks[k];
    const tdm_scene_obj *a = &s->objects[c->a], *b = &s->objects[c->b];
    const tdm_xform *xa = a->movable ? &poses[s->slot[c->a]] : &a->pose;
    const tdm_xform *xb = b->movable ? &poses[s->slot[c->b]] : &b->pose;
    tdm_task t;
    memset(&t, 0, sizeof t);
    t.a = a->bvh;
    t.b = b->bvh;
    t.b_in_a = c->a_at_origin ? *xb : tdm_xform_rel(xa, xb);
    t.mode = TDM_MODE_BOOL;
    t.max_pairs = 1;
    return t;
}

typedef struct totals { double box, tri, front, at_root; } totals;

/* (a) on sequences [s0, s1): tdm_collide on each of their tasks. */
static double run_roots(const work *w, size_t s0, size_t s1, tdm_collide_result *res)
{
    size_t lo = w->seqs[s0].first, hi = w->seqs[s1 - 1].first + w->seqs[s1 - 1].n;
    double t0 = now();
    for (size_t i = lo; i < hi; i++) tdm_collide(&w->tasks[i], &res[i]);
    return now() - t0;
}

/* (b) on sequences [s0, s1): one front per sequence. *front (optional) adds up
 * the front's size after each check. */
static double run_fronts(const work *w, size_t s0, size_t s1, tdm_front *f, tdm_collide_result *res, double *front)
{
    double t0 = now();
    for (size_t s = s0; s < s1; s++) {
        tdm_front_reset(f);
        for (size_t i = w->seqs[s].first; i < w->seqs[s].first + w->seqs[s].n; i++) {
            tdm_front_collide(f, &w->tasks[i], &res[i]);
            if (front) *front += f->n;
        }
    }
    return now() - t0;
}

static totals count(const tdm_collide_result *res, size_t n)
{
    totals t = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        t.box += res[i].box_tests;
        t.tri += res[i].tri_tests;
        t.at_root += res[i].box_tests == 1;
    }
    return t;
}

/* Timing blocks: runs of whole sequences of about this many tasks (a few
 * milliseconds), each timed for both methods back to back, in alternating
 * order, the best of the repeats kept per block: on a machine shared with other
 * work, a block's best time is one that nothing interrupted, and the sum of the
 * best times is the honest total. */
#define BLOCK_TASKS 4096

int main(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL, *world = NULL, *mfile = NULL;
    double resolution = 0;
    int all_states = 0, repeat = 5;
    long prune_every = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--all-states")) { all_states = 1; continue; }
        if (!v) die("%s needs a value", a);
        if (!strcmp(a, "--urdf")) urdf = v;
        else if (!strcmp(a, "--srdf")) srdf = v;
        else if (!strcmp(a, "--world")) world = v;
        else if (!strcmp(a, "--motions")) mfile = v;
        else if (!strcmp(a, "--resolution")) resolution = atof(v);
        else if (!strcmp(a, "--repeat")) repeat = atoi(v);
        else if (!strcmp(a, "--prune-every")) prune_every = atol(v);
        else die("unknown option %s", a);
        i++;
    }
    if (!urdf || !world || !mfile || !(resolution > 0) || repeat < 1)
        die("usage: bench_fronts --urdf URDF [--srdf SRDF] --world SCENE.yaml --motions FILE --resolution R "
            "[--all-states] [--repeat N] [--prune-every K]%s", "");

    char err[1024];
    tdm_robot *robot;
    tdm_planning_scene *ps;
    tdm_robot_scene *rs;
    if (tdm_robot_load(urdf, srdf, &robot, err, sizeof err)) die("robot: %s", err);
    if (tdm_planning_scene_read(world, &ps, err, sizeof err)) die("world: %s", err);
    if (tdm_robot_scene_create(robot, ps, load_mesh, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err))
        die("scene: %s", err);
    const tdm_scene *s = rs->scene;
    size_t J = robot->n_active, n_motions;
    double *motions = read_records(mfile, 2 * J, &n_motions);

    /* the tasks: per motion, per check, its kept states in order */
    tdm_xform *link_world = malloc(sizeof *link_world * robot->n_links);
    double *q = malloc(sizeof *q * J);
    work w = {0};
    size_t states = 0;
    size_t words = (s->n_checks + 63) / 64;
    double (*centres)[4] = malloc(sizeof *centres * (s->n_movable + s->n_fixed + 1));
    if (!centres) die("out of memory%s", "");
    tdm_scene_cull_fixed(s, centres);
    for (size_t m = 0; m < n_motions; m++) {
        const double *a = motions + m * 2 * J, *b = a + J;
        uint64_t n = tdm__motion_states(a, b, J, resolution);
        if (n == 0) die("a motion with too many states%s", "");
        tdm_xform *poses = malloc(sizeof *poses * n * rs->n_movable);
        uint64_t *bits = malloc(sizeof *bits * n * words); /* each state's kept checks, as the scheduler culls */
        if (!poses || !bits || !link_world || !q) die("out of memory%s", "");
        for (uint64_t k = 0; k < n; k++) {
            tdm__motion_state(a, b, J, k, n, q);
            if (tdm_robot_scene_poses(rs, q, J, link_world, poses + k * rs->n_movable)) die("bad motion%s", "");
            tdm_scene_cull(s, poses + k * rs->n_movable, centres, bits + k * words);
        }
        uint64_t last = n - 1; /* the last state checked: the first colliding one, unless --all-states */
        if (!all_states) {
            for (uint64_t k = 0; k < n && last == n - 1; k++)
                for (uint32_t c = 0; c < s->n_checks; c++) {
                    if (!kept(bits + k * words, c)) continue;
                    tdm_task t = task_of(s, c, poses + k * rs->n_movable);
                    tdm_collide_result r;
                    tdm_collide(&t, &r);
                    if (r.colliding) {
                        last = k;
                        break;
                    }
                }
        }
        states += last + 1;
        for (uint32_t c = 0; c < s->n_checks; c++) {
            size_t first = w.n_tasks;
            for (uint64_t k = 0; k <= last; k++)
                if (kept(bits + k * words, c)) {
                    tdm_task t = task_of(s, c, poses + k * rs->n_movable);
                    push_task(&w, &t);
                }
            push_seq(&w, first, w.n_tasks - first);
        }
        free(poses);
        free(bits);
    }

    if (w.n_seqs == 0) die("no task: every checked pair is culled at every state%s", "");
    tdm_collide_result *ra = malloc(sizeof *ra * (w.n_tasks + 1)), *rb = malloc(sizeof *rb * (w.n_tasks + 1));
    if (!ra || !rb) die("out of memory%s", "");
    tdm_front f;
    tdm_front_init(&f);
    if (prune_every >= 0) f.prune_every = (uint32_t)prune_every;
    /* warm-up (caches, the front's memory), the counts, and the answers compared */
    double front = 0;
    run_roots(&w, 0, w.n_seqs, ra);
    run_fronts(&w, 0, w.n_seqs, &f, rb, &front);
    totals ta = count(ra, w.n_tasks), tb = count(rb, w.n_tasks);
    tb.front = front;
    for (size_t i = 0; i < w.n_tasks; i++)
        if (ra[i].colliding != rb[i].colliding ||
            (ra[i].colliding && (ra[i].first.a_tri != rb[i].first.a_tri || ra[i].first.b_tri != rb[i].first.b_tri))) {
            fprintf(stderr, "bench_fronts: task %zu: roots say %u, front %u\n", i, ra[i].colliding, rb[i].colliding);
            return 1;
        }
    size_t *blk = malloc(sizeof *blk * (w.n_seqs + 1)), n_blk = 0;
    if (!blk) die("out of memory%s", "");
    for (size_t s0 = 0, acc = 0; s0 < w.n_seqs; s0++) {
        if (acc == 0) blk[n_blk++] = s0;
        acc += w.seqs[s0].n;
        if (acc >= BLOCK_TASKS) acc = 0;
    }
    blk[n_blk] = w.n_seqs;
    double *best = malloc(sizeof *best * 2 * (n_blk + 1));
    if (!best) die("out of memory%s", "");
    for (size_t k = 0; k < 2 * n_blk; k++) best[k] = 1e300;
    for (int r = 0; r < repeat; r++)
        for (size_t k = 0; k < n_blk; k++) {
            double x, y;
            if ((r + (int)k) % 2) {
                x = run_roots(&w, blk[k], blk[k + 1], ra);
                y = run_fronts(&w, blk[k], blk[k + 1], &f, rb, NULL);
            } else {
                y = run_fronts(&w, blk[k], blk[k + 1], &f, rb, NULL);
                x = run_roots(&w, blk[k], blk[k + 1], ra);
            }
            if (x < best[2 * k]) best[2 * k] = x;
            if (y < best[2 * k + 1]) best[2 * k + 1] = y;
        }
    double best_a = 0, best_b = 0;
    for (size_t k = 0; k < n_blk; k++) {
        best_a += best[2 * k];
        best_b += best[2 * k + 1];
    }
    free(best);
    free(blk);
    for (size_t i = 0; i < w.n_tasks; i++)
        if (ra[i].colliding != rb[i].colliding) {
            fprintf(stderr, "bench_fronts: task %zu: roots say %u, front %u (timed run)\n", i, ra[i].colliding,
                    rb[i].colliding);
            return 1;
        }
    double nt = w.n_tasks ? (double)w.n_tasks : 1;
    printf("| %zu | %zu | %zu | %.0f%% | %.1f | %.1f | %.2f | %.2f | %.1f | %.0f | %.0f | %.0f | %.0f | %.2f |\n",
           n_motions, states, w.n_tasks, 100 * ta.at_root / nt, ta.box / nt, tb.box / nt, ta.tri / nt, tb.tri / nt, tb.front / nt, 1e9 * best_a / nt,
           1e9 * best_b / nt, 1e9 * best_a / (double)states, 1e9 * best_b / (double)states, best_b / best_a);

    tdm_front_fini(&f);
    free(ra);
    free(rb);
    free(w.tasks);
    free(w.seqs);
    free(q);
    free(link_world);
    free(centres);
    free(motions);
    tdm_robot_scene_destroy(rs);
    tdm_planning_scene_free(ps);
    tdm_robot_free(robot);
    return 0;
}
