/* bench_cpu: Tandem's CPU engine side by side with FCL 0.7 on the same meshes and
 * the same poses, on one thread and on N.
 *
 * The world mesh is object A at the identity; the robot is object B, vertex v going
 * to R(q) v + t. Both libraries get the same float vertices (FCL as doubles) and the
 * same rotation matrix for each pose, so an answer that differs is a difference in
 * the libraries, not in the inputs. FCL uses BVHModel<OBBRSS> (its fastest
 * mesh-mesh path: an oriented traversal that never copies or moves the vertices)
 * with enable_contact off: it then records each intersecting triangle pair as one
 * contact, which is what Tandem's contacts mode counts.
 *
 * Only the query loops are timed; tree builds are reported on their own line. Each
 * disagreement is checked against an exhaustive search (every env x robot triangle
 * pair through the exact tdm_tri_tri_intersect, pruned only by exact double
 * bounding boxes) and explained by distances measured relative to the size of the
 * scene: see explain_bool() and explain_contacts(). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcl/geometry/bvh/BVH_model.h>
#include <fcl/math/bv/OBBRSS.h>
#include <fcl/narrowphase/collision.h>
#include <fcl/narrowphase/collision_object.h>

extern "C" {
#include "geom/bvh.h"
#include "geom/tri.h"
#include "workpile/cpu_engine.h"
}
#include "tools/io.h"

namespace {

typedef fcl::BVHModel<fcl::OBBRSSd> fcl_model;

const uint32_t MAX_CONTACTS = 1000000;
/* Differences smaller than this fraction of the scene's diagonal are rounding. */
const double REL_TOL = 1e-6;
const int MAX_PRINTED = 10;

double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct options {
    const char *env = nullptr, *robot = nullptr, *poses = nullptr, *name = nullptr;
    int threads = 0;
    bool run_bool = true, run_contacts = true;
    int repeat = 1;
    size_t one_thread_poses = 0; /* 0: all */
};

const char usage[] =
    "usage: bench_cpu --env ENV --robot ROBOT --poses POSES [--threads N]\n"
    "                 [--mode bool|contacts|both] [--name SCENE] [--repeat R]\n"
    "                 [--one-thread-poses M]\n"
    "  Meshes are loaded as they are (raw origin); POSES holds one \"x y z qx qy qz qw\"\n"
    "  per line. Times FCL 0.7 (BVHModel<OBBRSS>) and Tandem's CPU engine on 1 and N\n"
    "  threads (default: one per online core), best of R runs, and explains every pose\n"
    "  where their answers differ (pose numbers count the file's poses from 0). One\n"
    "  line per mode starts with RESULT. --one-thread-poses times the one-thread loops\n"
    "  on the first M poses only (their rate is reported; N threads run them all).\n";

int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            exit(0);
        }
        if (!strcmp(a, "--fcl-version")) { /* the FCL this binary was built against */
            puts(TDM_FCL_VERSION);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_cpu: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--env")) o->env = v;
        else if (!strcmp(a, "--robot")) o->robot = v;
        else if (!strcmp(a, "--poses")) o->poses = v;
        else if (!strcmp(a, "--name")) o->name = v;
        else if (!strcmp(a, "--one-thread-poses")) {
            char *end;
            unsigned long long n = strtoull(v, &end, 10);
            if (*end || n < 1) {
                fprintf(stderr, "bench_cpu: --one-thread-poses wants a whole number >= 1, not '%s'\n", v);
                return -1;
            }
            o->one_thread_poses = (size_t)n;
        }
        else if (!strcmp(a, "--threads") || !strcmp(a, "--repeat")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 4096) {
                fprintf(stderr, "bench_cpu: %s wants a whole number in [1, 4096], not '%s'\n", a, v);
                return -1;
            }
            if (!strcmp(a, "--threads")) o->threads = (int)n;
            else o->repeat = (int)n;
        } else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "bool")) { o->run_bool = true; o->run_contacts = false; }
            else if (!strcmp(v, "contacts")) { o->run_bool = false; o->run_contacts = true; }
            else if (!strcmp(v, "both")) { o->run_bool = o->run_contacts = true; }
            else {
                fprintf(stderr, "bench_cpu: --mode is bool, contacts or both, not '%s'\n", v);
                return -1;
            }
        } else {
            fprintf(stderr, "bench_cpu: unknown option %s\n", a);
            return -1;
        }
    }
    if (!o->env || !o->robot || !o->poses) {
        fputs(usage, stderr);
        return -1;
    }
    if (!o->threads) {
        unsigned hc = std::thread::hardware_concurrency();
        o->threads = hc ? (int)hc : 1;
    }
    if (!o->name) o->name = o->env;
    return 0;
}

/* A triangle in double with its exact bounding box (min and max of doubles are exact). */
struct dtri {
    tdm_dvec3 v[3];
    tdm_dvec3 lo, hi;
};

dtri make_dtri(const tdm_mesh *m, uint32_t t, const tdm_xform *x)
{
    dtri d;
    for (int k = 0; k < 3; k++) {
        const float *p = &m->verts[3 * (size_t)m->tris[3 * (size_t)t + k]];
        tdm_dvec3 q = tdm_d3(p[0], p[1], p[2]);
        /* the same arithmetic as the CPU engine's leaf test, so the exhaustive
         * search sees exactly the coordinates Tandem saw */
        d.v[k] = x ? tdm_xform_apply(x, q) : q;
    }
    d.lo = d.hi = d.v[0];
    for (int k = 1; k < 3; k++) {
        d.lo = tdm_d3(fmin(d.lo.x, d.v[k].x), fmin(d.lo.y, d.v[k].y), fmin(d.lo.z, d.v[k].z));
        d.hi = tdm_d3(fmax(d.hi.x, d.v[k].x), fmax(d.hi.y, d.v[k].y), fmax(d.hi.z, d.v[k].z));
    }
    return d;
}

/* Distance between two boxes (0 when they touch or overlap). */
double box_dist(tdm_dvec3 alo, tdm_dvec3 ahi, tdm_dvec3 blo, tdm_dvec3 bhi)
{
    double dx = fmax(0.0, fmax(alo.x - bhi.x, blo.x - ahi.x));
    double dy = fmax(0.0, fmax(alo.y - bhi.y, blo.y - ahi.y));
    double dz = fmax(0.0, fmax(alo.z - bhi.z, blo.z - ahi.z));
    return sqrt(dx * dx + dy * dy + dz * dz);
}

bool box_overlap(const dtri &a, const dtri &b)
{
    return a.lo.x <= b.hi.x && b.lo.x <= a.hi.x && a.lo.y <= b.hi.y && b.lo.y <= a.hi.y && a.lo.z <= b.hi.z &&
           b.lo.z <= a.hi.z;
}

struct scene {
    std::string name;
    tdm_mesh *env = nullptr, *robot = nullptr;
    tdm_bvh *benv = nullptr, *brobot = nullptr;
    std::shared_ptr<fcl_model> fenv, frobot;
    std::vector<tdm_pose> poses;
    std::vector<tdm_xform> xf;          /* per pose: robot frame -> world */
    std::vector<fcl::Matrix3d> rot;     /* the same rotation, for FCL */
    std::vector<fcl::Vector3d> trans;
    std::vector<dtri> env_tris;         /* for the exhaustive search */
    double diag = 0;                    /* env bounding-box diagonal */

    ~scene()
    {
        tdm_bvh_free(benv);
        tdm_bvh_free(brobot);
        tdm_mesh_free(env);
        tdm_mesh_free(robot);
    }
};

std::shared_ptr<fcl_model> fcl_model_of(const tdm_mesh *m)
{
    std::vector<fcl::Vector3d> pts(m->n_verts);
    std::vector<fcl::Triangle> tris(m->n_tris);
    for (uint32_t i = 0; i < m->n_verts; i++)
        pts[i] = fcl::Vector3d(m->verts[3 * i], m->verts[3 * i + 1], m->verts[3 * i + 2]);
    for (uint32_t i = 0; i < m->n_tris; i++) tris[i].set(m->tris[3 * i], m->tris[3 * i + 1], m->tris[3 * i + 2]);
    auto model = std::make_shared<fcl_model>();
    if (model->beginModel((int)m->n_tris, (int)m->n_verts) != fcl::BVH_OK ||
        model->addSubModel(pts, tris) != fcl::BVH_OK || model->endModel() != fcl::BVH_OK)
        return nullptr;
    return model;
}

int load_scene(const options &o, scene *s)
{
    char err[512] = "";
    int rc;
    s->name = o.name;
    if ((rc = tdm_mesh_load_file(o.env, TDM_ORIGIN_RAW, &s->env, err, sizeof err)) ||
        (rc = tdm_mesh_load_file(o.robot, TDM_ORIGIN_RAW, &s->robot, err, sizeof err))) {
        fprintf(stderr, "bench_cpu: %s (%s)\n", err, tdm_strerror(rc));
        return -1;
    }
    tdm_pose *p = nullptr;
    size_t n = 0;
    if ((rc = tdm_poses_read(o.poses, &p, &n, err, sizeof err))) {
        fprintf(stderr, "bench_cpu: %s (%s)\n", err, tdm_strerror(rc));
        return -1;
    }
    s->poses.assign(p, p + n);
    free(p);
    if (n == 0) {
        fprintf(stderr, "bench_cpu: %s holds no poses\n", o.poses);
        return -1;
    }
    for (const tdm_pose &q : s->poses) {
        tdm_xform x = tdm_xform_from_pose(q.t, q.q);
        s->xf.push_back(x);
        fcl::Matrix3d r;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) r(i, j) = x.r.m[i][j];
        s->rot.push_back(r);
        s->trans.push_back(fcl::Vector3d(x.t.x, x.t.y, x.t.z));
    }

    double t0 = now_s();
    if ((rc = tdm_bvh_build(s->env, &s->benv)) || (rc = tdm_bvh_build(s->robot, &s->brobot))) {
        fprintf(stderr, "bench_cpu: tdm_bvh_build: %s\n", tdm_strerror(rc));
        return -1;
    }
    double t1 = now_s();
    s->fenv = fcl_model_of(s->env);
    s->frobot = fcl_model_of(s->robot);
    double t2 = now_s();
    if (!s->fenv || !s->frobot) {
        fprintf(stderr, "bench_cpu: FCL rejected a mesh\n");
        return -1;
    }

    tdm_dvec3 lo = tdm_d3(INFINITY, INFINITY, INFINITY), hi = tdm_d3(-INFINITY, -INFINITY, -INFINITY);
    for (uint32_t t = 0; t < s->env->n_tris; t++) {
        dtri d = make_dtri(s->env, t, nullptr);
        s->env_tris.push_back(d);
        lo = tdm_d3(fmin(lo.x, d.lo.x), fmin(lo.y, d.lo.y), fmin(lo.z, d.lo.z));
        hi = tdm_d3(fmax(hi.x, d.hi.x), fmax(hi.y, d.hi.y), fmax(hi.z, d.hi.z));
    }
    s->diag = tdm_d3_len(tdm_d3_sub(hi, lo));
    printf("BUILD scene=%s env_tris=%u robot_tris=%u poses=%zu diag=%.6g tdm_ms=%.3f fcl_ms=%.3f\n",
           s->name.c_str(), s->env->n_tris, s->robot->n_tris, n, s->diag, 1e3 * (t1 - t0), 1e3 * (t2 - t1));
    return 0;
}

/* ---- timed runs ----------------------------------------------------------- */

template <class F> double best_of(int repeat, F f)
{
    double best = INFINITY;
    for (int r = 0; r < repeat; r++) {
        double t0 = now_s();
        f();
        best = std::min(best, now_s() - t0);
    }
    return best;
}

/* FCL on poses [lo, hi) with one pair of objects; out[i] = number of contacts. */
void fcl_range(const scene &s, const fcl::CollisionObjectd &env, fcl::CollisionObjectd &robot,
               const fcl::CollisionRequestd &req, size_t lo, size_t hi, uint32_t *out)
{
    fcl::CollisionResultd res;
    for (size_t i = lo; i < hi; i++) {
        robot.setTransform(s.rot[i], s.trans[i]);
        res.clear();
        fcl::collide(&env, &robot, req, res);
        out[i] = (uint32_t)res.numContacts();
    }
}

/* FCL on n threads (the caller included), each with its own pair of
 * CollisionObjects over the shared, read-only BVHModels, taking chunks of poses
 * from one atomic counter, as Tandem's engine does. The objects are made before the
 * clock starts (their constructor writes the model's local AABB, so it must not
 * run concurrently), and the workers wait for a start flag, so thread creation is
 * not timed either. */
double fcl_threads(const scene &s, const fcl::CollisionRequestd &req, int n_threads, uint32_t *out)
{
    const size_t n = s.poses.size(), chunk = 16;
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> envs, robots;
    for (int i = 0; i < n_threads; i++) {
        envs.emplace_back(new fcl::CollisionObjectd(s.fenv));
        robots.emplace_back(new fcl::CollisionObjectd(s.frobot));
    }
    std::atomic<size_t> next(0);
    std::atomic<int> ready(0);
    std::atomic<bool> go(false);
    auto work = [&](int k) {
        for (;;) {
            size_t lo = next.fetch_add(chunk);
            if (lo >= n) return;
            fcl_range(s, *envs[k], *robots[k], req, lo, std::min(n, lo + chunk), out);
        }
    };
    std::vector<std::thread> pool;
    for (int k = 1; k < n_threads; k++)
        pool.emplace_back([&, k] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            work(k);
        });
    while (ready.load() < n_threads - 1) std::this_thread::yield();
    double t0 = now_s();
    go.store(true, std::memory_order_release);
    work(0);
    for (std::thread &t : pool) t.join();
    return now_s() - t0;
}

/* ---- explaining disagreements --------------------------------------------- */

/* What we know of one triangle pair, env triangle a against moved robot triangle b. */
struct pair_info {
    uint32_t a, b;
    int hit;         /* exact tdm_tri_tri_intersect */
    double dist;     /* tdm_tri_tri_distance (0 when hit) */
    double depth;    /* when hit: a translation that separates them (see sep_depth) */
    double off;      /* how far from coplanar: min over the two planes of the other's
                        largest vertex height over it (INFINITY if both are zero-area) */
    double angle;    /* degrees between the planes, -1 if either is zero-area */
    int degen_a, degen_b;
};

/* Largest height above and below the plane of t (unit normal n) over the points of u. */
void heights(const tdm_dvec3 *t, tdm_dvec3 n, const tdm_dvec3 *u, double *above, double *below)
{
    *above = *below = 0;
    for (int k = 0; k < 3; k++) {
        double h = tdm_d3_dot(n, tdm_d3_sub(u[k], t[0]));
        *above = fmax(*above, h);
        *below = fmax(*below, -h);
    }
}

bool unit_normal(const tdm_dvec3 *t, tdm_dvec3 *n)
{
    tdm_dvec3 c = tdm_d3_cross(tdm_d3_sub(t[1], t[0]), tdm_d3_sub(t[2], t[0]));
    double l = tdm_d3_len(c);
    if (!(l > 0)) return false;
    *n = tdm_d3_scale(c, 1 / l);
    return true;
}

pair_info describe(const scene &s, const std::vector<dtri> &rob, uint32_t a, uint32_t b)
{
    const tdm_dvec3 *p = s.env_tris[a].v, *q = rob[b].v;
    pair_info pi;
    pi.a = a;
    pi.b = b;
    pi.hit = tdm_tri_tri_intersect(p, q);
    pi.dist = tdm_tri_tri_distance(p, q, nullptr, nullptr);
    pi.degen_a = tdm_tri_degenerate(p);
    pi.degen_b = tdm_tri_degenerate(q);
    tdm_dvec3 np, nq;
    bool hp = unit_normal(p, &np), hq = unit_normal(q, &nq);
    /* Moving one triangle along the other's normal by the smaller of the other's
     * heights above and below that plane leaves it on one side: an upper bound on
     * the penetration depth, and ~0 for a pair that only touches. */
    pi.depth = pi.off = INFINITY;
    double up, down;
    if (hp) {
        heights(p, np, q, &up, &down);
        pi.depth = fmin(pi.depth, fmin(up, down));
        pi.off = fmin(pi.off, fmax(up, down));
    }
    if (hq) {
        heights(q, nq, p, &up, &down);
        pi.depth = fmin(pi.depth, fmin(up, down));
        pi.off = fmin(pi.off, fmax(up, down));
    }
    if (!pi.hit) pi.depth = 0;
    pi.angle = -1;
    if (hp && hq) {
        double c = fabs(tdm_d3_dot(np, nq));
        pi.angle = acos(fmin(1.0, c)) * 180 / M_PI;
    }
    return pi;
}

/* Why FCL's answer on this pair may differ from the exact one; "" when nothing
 * explains it. FCL's triangle test (Intersect::intersect_Triangle) is a
 * separating-axis test in floating point over 17 axes: both normals, the nine
 * edge cross products and the six in-plane edge normals. Its rounding flips pairs
 * that touch either way; and a zero-area triangle has no normal, so the axes built
 * from it are zero vectors and the test may lack the one that separates (a false
 * hit, never a miss). */
const char *fcl_reason(const pair_info &pi, double tol)
{
    if (pi.hit) return pi.depth <= tol ? "touching (FCL rounding)" : "";
    if (pi.dist <= tol) return "near-touching (FCL rounding)";
    if (pi.degen_a || pi.degen_b) return "zero-area triangle (FCL's axes degenerate)";
    return "";
}

void print_pair(const char *what, const pair_info &pi, double diag)
{
    printf("    %s pair env#%u x robot#%u: exact=%s dist=%.3g (%.2g of scene) depth=%.3g (%.2g) "
           "off-plane=%.3g angle=%.3g deg%s%s\n",
           what, pi.a, pi.b, pi.hit ? "hit" : "miss", pi.dist, pi.dist / diag, pi.depth, pi.depth / diag, pi.off,
           pi.angle, pi.degen_a ? " env-zero-area" : "", pi.degen_b ? " robot-zero-area" : "");
}

void robot_tris(const scene &s, size_t pose, std::vector<dtri> *out, tdm_dvec3 *lo, tdm_dvec3 *hi)
{
    out->clear();
    *lo = tdm_d3(INFINITY, INFINITY, INFINITY);
    *hi = tdm_d3(-INFINITY, -INFINITY, -INFINITY);
    for (uint32_t t = 0; t < s.robot->n_tris; t++) {
        dtri d = make_dtri(s.robot, t, &s.xf[pose]);
        out->push_back(d);
        *lo = tdm_d3(fmin(lo->x, d.lo.x), fmin(lo->y, d.lo.y), fmin(lo->z, d.lo.z));
        *hi = tdm_d3(fmax(hi->x, d.hi.x), fmax(hi->y, d.hi.y), fmax(hi->z, d.hi.z));
    }
}

/* Every intersecting (env, robot) pair by exhaustive search, sorted. */
std::vector<tdm_pair> truth_pairs(const scene &s, const std::vector<dtri> &rob, tdm_dvec3 lo, tdm_dvec3 hi)
{
    std::vector<tdm_pair> out;
    for (uint32_t a = 0; a < s.env_tris.size(); a++) {
        const dtri &e = s.env_tris[a];
        if (box_dist(e.lo, e.hi, lo, hi) > 0) continue;
        for (uint32_t b = 0; b < rob.size(); b++)
            if (box_overlap(e, rob[b]) && tdm_tri_tri_intersect(e.v, rob[b].v)) out.push_back(tdm_pair{a, b});
    }
    return out;
}

/* The smallest distance over all pairs, given one pair's distance as a start. */
double min_distance(const scene &s, const std::vector<dtri> &rob, tdm_dvec3 lo, tdm_dvec3 hi, double best,
                    tdm_pair *arg)
{
    for (uint32_t a = 0; a < s.env_tris.size(); a++) {
        const dtri &e = s.env_tris[a];
        if (box_dist(e.lo, e.hi, lo, hi) >= best) continue;
        for (uint32_t b = 0; b < rob.size(); b++) {
            if (box_dist(e.lo, e.hi, rob[b].lo, rob[b].hi) >= best) continue;
            double d = tdm_tri_tri_distance(e.v, rob[b].v, nullptr, nullptr);
            if (d < best) {
                best = d;
                *arg = tdm_pair{a, b};
            }
        }
    }
    return best;
}

bool pair_less(const tdm_pair &x, const tdm_pair &y)
{
    return x.a_tri != y.a_tri ? x.a_tri < y.a_tri : x.b_tri < y.b_tri;
}
bool pair_eq(const tdm_pair &x, const tdm_pair &y) { return x.a_tri == y.a_tri && x.b_tri == y.b_tri; }

std::vector<tdm_pair> minus(const std::vector<tdm_pair> &x, const std::vector<tdm_pair> &y)
{
    std::vector<tdm_pair> out;
    std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out), pair_less);
    return out;
}

struct verdict {
    bool explained = false;
    bool tandem_wrong = false;
};

void print_pose(const scene &s, size_t i)
{
    const tdm_pose &p = s.poses[i];
    printf("  pose %zu: %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", i, p.t.x, p.t.y, p.t.z, p.q.x, p.q.y,
           p.q.z, p.q.w);
}

/* Bool mode, pose i: FCL and Tandem disagree on whether anything collides. */
verdict explain_bool(const scene &s, size_t i, bool fcl_hit, const tdm_collide_result &tr, bool print)
{
    verdict v;
    double tol = REL_TOL * s.diag;
    std::vector<dtri> rob;
    tdm_dvec3 lo, hi;
    robot_tris(s, i, &rob, &lo, &hi);
    std::vector<tdm_pair> truth = truth_pairs(s, rob, lo, hi);
    if (print) {
        printf("DISAGREE scene=%s mode=bool pose=%zu fcl=%d tdm=%u exhaustive=%zu pairs\n", s.name.c_str(), i,
               (int)fcl_hit, tr.colliding, truth.size());
        print_pose(s, i);
    }
    if (fcl_hit) {
        if (!truth.empty()) {
            v.tandem_wrong = true;
            if (print) {
                printf("    TANDEM-BUG? Tandem found no pair but the exhaustive search finds %zu\n", truth.size());
                print_pair("missed", describe(s, rob, truth[0].a_tri, truth[0].b_tri), s.diag);
            }
            return v;
        }
        /* which pair did FCL see? */
        fcl::CollisionObjectd oe(s.fenv), orb(s.frobot);
        orb.setTransform(s.rot[i], s.trans[i]);
        fcl::CollisionRequestd req(1, false);
        fcl::CollisionResultd res;
        fcl::collide(&oe, &orb, req, res);
        if (res.numContacts() == 0) return v; /* cannot happen: FCL is deterministic */
        const fcl::Contactd &c = res.getContact(0);
        pair_info pi = describe(s, rob, (uint32_t)c.b1, (uint32_t)c.b2);
        tdm_pair arg = {pi.a, pi.b};
        double dmin = min_distance(s, rob, lo, hi, pi.dist, &arg);
        const char *why = fcl_reason(pi, tol);
        v.explained = why[0] != 0;
        if (print) {
            print_pair("FCL's", pi, s.diag);
            printf("    min distance over all pairs %.3g (%.2g of scene) at env#%u x robot#%u -> %s\n", dmin,
                   dmin / s.diag, arg.a_tri, arg.b_tri, v.explained ? why : "UNEXPLAINED FCL false positive");
        }
        return v;
    }
    /* Tandem says colliding, FCL not: every exact pair is one FCL missed */
    if (truth.empty() || !std::binary_search(truth.begin(), truth.end(), tr.first, pair_less)) {
        v.tandem_wrong = true;
        if (print) {
            printf("    TANDEM-BUG? Tandem reports env#%u x robot#%u, which the exhaustive search does not find\n",
                   tr.first.a_tri, tr.first.b_tri);
            print_pair("Tandem's", describe(s, rob, tr.first.a_tri, tr.first.b_tri), s.diag);
        }
        return v;
    }
    size_t unexplained = 0;
    pair_info worst = describe(s, rob, truth[0].a_tri, truth[0].b_tri);
    const char *worst_why = fcl_reason(worst, tol);
    for (const tdm_pair &p : truth) {
        pair_info pi = describe(s, rob, p.a_tri, p.b_tri);
        const char *why = fcl_reason(pi, tol);
        if (!why[0]) unexplained++;
        if ((!why[0] && worst_why[0]) || (!why[0] == !worst_why[0] && pi.depth > worst.depth)) {
            worst = pi;
            worst_why = why;
        }
    }
    v.explained = unexplained == 0;
    if (print) {
        print_pair("deepest", worst, s.diag);
        printf("    FCL missed %zu exact pairs, %zu not explained -> %s\n", truth.size(), unexplained,
               v.explained ? worst_why : "UNEXPLAINED FCL miss");
    }
    return v;
}

/* Contacts mode, pose i: the pair counts differ. Compares both sets with the
 * exhaustive one. */
verdict explain_contacts(const scene &s, size_t i, uint32_t fcl_n, uint32_t tdm_n, std::vector<tdm_pair> *buf,
                         bool print)
{
    verdict v;
    double tol = REL_TOL * s.diag;
    std::vector<dtri> rob;
    tdm_dvec3 lo, hi;
    robot_tris(s, i, &rob, &lo, &hi);
    std::vector<tdm_pair> truth = truth_pairs(s, rob, lo, hi);

    fcl::CollisionObjectd oe(s.fenv), orb(s.frobot);
    orb.setTransform(s.rot[i], s.trans[i]);
    fcl::CollisionRequestd req(MAX_CONTACTS, false);
    fcl::CollisionResultd res;
    fcl::collide(&oe, &orb, req, res);
    std::vector<tdm_pair> fset;
    for (size_t k = 0; k < res.numContacts(); k++)
        fset.push_back(tdm_pair{(uint32_t)res.getContact(k).b1, (uint32_t)res.getContact(k).b2});
    std::sort(fset.begin(), fset.end(), pair_less);
    fset.erase(std::unique(fset.begin(), fset.end(), pair_eq), fset.end());
    size_t f_dups = res.numContacts() - fset.size();

    tdm_task task = {s.benv, s.brobot, nullptr, nullptr, s.xf[i], TDM_MODE_CONTACTS, MAX_CONTACTS, buf->data(), nullptr, 0};
    tdm_collide_result tr;
    tdm_collide(&task, &tr);
    std::vector<tdm_pair> tset(buf->begin(), buf->begin() + tr.n_pairs);
    std::sort(tset.begin(), tset.end(), pair_less);

    std::vector<tdm_pair> t_extra = minus(tset, truth), t_missed = minus(truth, tset);
    std::vector<tdm_pair> f_extra = minus(fset, truth), f_missed = minus(truth, fset);
    if (print) {
        printf("DISAGREE scene=%s mode=contacts pose=%zu fcl=%u tdm=%u exhaustive=%zu; FCL +%zu -%zu, Tandem +%zu "
               "-%zu against it\n",
               s.name.c_str(), i, fcl_n, tdm_n, truth.size(), f_extra.size(), f_missed.size(), t_extra.size(),
               t_missed.size());
        print_pose(s, i);
        if (f_dups) printf("    FCL reported %zu pairs twice\n", f_dups);
    }
    if (!t_extra.empty() || !t_missed.empty()) {
        v.tandem_wrong = true;
        if (print) {
            const tdm_pair &p = t_extra.empty() ? t_missed[0] : t_extra[0];
            printf("    TANDEM-BUG? Tandem's pair set differs from the exhaustive one\n");
            print_pair(t_extra.empty() ? "Tandem-missed" : "Tandem-extra", describe(s, rob, p.a_tri, p.b_tri),
                       s.diag);
        }
        return v;
    }
    size_t unexplained = 0, shown = 0;
    for (int side = 0; side < 2; side++) {
        const std::vector<tdm_pair> &diff = side ? f_missed : f_extra;
        for (const tdm_pair &p : diff) {
            pair_info pi = describe(s, rob, p.a_tri, p.b_tri);
            const char *why = fcl_reason(pi, tol);
            if (!why[0]) unexplained++;
            /* show a few, unexplained ones first */
            if (print && shown < 3 && (!why[0] || diff.size() <= 3)) {
                print_pair(side ? "FCL-missed" : "FCL-extra", pi, s.diag);
                printf("      -> %s\n", why[0] ? why : (side ? "UNEXPLAINED FCL miss" : "UNEXPLAINED FCL extra"));
                shown++;
            }
        }
    }
    v.explained = unexplained == 0;
    if (print) printf("    %zu FCL pairs differ, %zu not explained\n", f_extra.size() + f_missed.size(), unexplained);
    return v;
}

/* ---- one mode ---------------------------------------------------------------- */

int run_mode(const scene &s, const options &o, tdm_cpu_engine *engine, tdm_mode mode)
{
    const size_t n = s.poses.size();
    const bool contacts = mode == TDM_MODE_CONTACTS;
    const char *mname = contacts ? "contacts" : "bool";
    fcl::CollisionRequestd req(contacts ? MAX_CONTACTS : 1, false);

    std::vector<tdm_task> tasks(n);
    for (size_t i = 0; i < n; i++) tasks[i] = tdm_task{s.benv, s.brobot, nullptr, nullptr, s.xf[i], mode, MAX_CONTACTS, nullptr, nullptr, 0};
    std::vector<tdm_collide_result> t1(n), tn(n);
    std::vector<uint32_t> f1(n), fn(n);

    /* warm caches and FCL's static dispatch table on a few poses */
    fcl::CollisionObjectd oe(s.fenv), orb(s.frobot);
    size_t warm = std::min<size_t>(n, 256);
    fcl_range(s, oe, orb, req, 0, warm, f1.data());
    for (size_t i = 0; i < warm; i++) tdm_collide(&tasks[i], &t1[i]);

    const size_t n1 = o.one_thread_poses && o.one_thread_poses < n ? o.one_thread_poses : n;
    double sec_f1 = best_of(o.repeat, [&] { fcl_range(s, oe, orb, req, 0, n1, f1.data()); });
    double sec_t1 = best_of(o.repeat, [&] {
        for (size_t i = 0; i < n1; i++) tdm_collide(&tasks[i], &t1[i]);
    });
    double sec_fn = INFINITY, sec_tn = INFINITY;
    for (int r = 0; r < o.repeat; r++) {
        sec_fn = std::min(sec_fn, fcl_threads(s, req, o.threads, fn.data()));
        double t0 = now_s();
        tdm_cpu_engine_run(engine, tasks.data(), n, tn.data());
        sec_tn = std::min(sec_tn, now_s() - t0);
    }

    /* each library must give the same answers on 1 and N threads */
    size_t unstable = 0;
    for (size_t i = 0; i < n1; i++)
        if (f1[i] != fn[i] || t1[i].n_pairs != tn[i].n_pairs || t1[i].colliding != tn[i].colliding) unstable++;
    if (unstable) printf("WARNING scene=%s mode=%s: %zu poses answered differently on 1 and %d threads\n",
                         s.name.c_str(), mname, unstable, o.threads);

    size_t colliding = 0, disagree = 0, explained = 0, tandem_wrong = 0;
    uint64_t fcl_pairs = 0, tdm_pairs = 0;
    std::vector<tdm_pair> buf(contacts ? MAX_CONTACTS : 0);
    /* the N-thread answers cover every pose (and equal the one-thread ones where both ran) */
    for (size_t i = 0; i < n; i++) {
        colliding += tn[i].colliding;
        fcl_pairs += fn[i];
        tdm_pairs += tn[i].n_pairs;
        bool differ = contacts ? fn[i] != tn[i].n_pairs || tn[i].truncated : (fn[i] > 0) != (tn[i].colliding != 0);
        if (!differ) continue;
        bool print = disagree < (size_t)MAX_PRINTED;
        verdict v = contacts ? explain_contacts(s, i, fn[i], tn[i].n_pairs, &buf, print)
                             : explain_bool(s, i, fn[i] > 0, tn[i], print);
        disagree++;
        explained += v.explained;
        tandem_wrong += v.tandem_wrong;
    }
    if (disagree > (size_t)MAX_PRINTED)
        printf("  (%zu more disagreements not printed)\n", disagree - MAX_PRINTED);

    double q_f1 = n1 / sec_f1, q_t1 = n1 / sec_t1, q_fn = n / sec_fn, q_tn = n / sec_tn;
    printf("%-10s %s: %zu poses, %zu colliding (Tandem)\n", mname, s.name.c_str(), n, colliding);
    if (contacts) printf("           pairs: FCL %llu, Tandem %llu\n", (unsigned long long)fcl_pairs,
                         (unsigned long long)tdm_pairs);
    printf("           1 thread : FCL %12.0f qps  Tandem %12.0f qps  Tandem/FCL %.2fx\n", q_f1, q_t1, q_t1 / q_f1);
    printf("           %d threads: FCL %12.0f qps  Tandem %12.0f qps  Tandem/FCL %.2fx\n", o.threads, q_fn, q_tn,
           q_tn / q_fn);
    printf("           disagreements %zu, explained %zu, Tandem differs from exhaustive search %zu\n", disagree,
           explained, tandem_wrong);
    printf("RESULT scene=%s mode=%s poses=%zu poses1=%zu fcl1=%.1f tdm1=%.1f fclN=%.1f tdmN=%.1f threads=%d "
           "disagree=%zu explained=%zu tdm_wrong=%zu colliding=%zu",
           s.name.c_str(), mname, n, n1, q_f1, q_t1, q_fn, q_tn, o.threads, disagree, explained, tandem_wrong,
           colliding);
    if (contacts) printf(" fcl_pairs=%llu tdm_pairs=%llu", (unsigned long long)fcl_pairs, (unsigned long long)tdm_pairs);
    printf("\n");
    fflush(stdout);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o)) return 2;
    scene s;
    if (load_scene(o, &s)) return 1;
    tdm_cpu_engine *engine = nullptr;
    tdm_pool *pool = nullptr;
    int rc = tdm_pool_create(o.threads, "tdm-cpu", &pool);
    if (rc == 0) rc = tdm_cpu_engine_create(pool, &engine);
    if (rc) {
        fprintf(stderr, "bench_cpu: tdm_cpu_engine_create: %s\n", tdm_strerror(rc));
        return 1;
    }
    if (o.run_bool) run_mode(s, o, engine, TDM_MODE_BOOL);
    if (o.run_contacts) run_mode(s, o, engine, TDM_MODE_CONTACTS);
    tdm_cpu_engine_destroy(engine);
    tdm_pool_destroy(pool);
    return 0;
}
