/* bench_robot: an FCL reference for `tandem check --urdf` (issue 13, point 10).
 *
 *   bench_robot --urdf URDF [--srdf SRDF] --world SCENE.yaml --configs FILE
 *               --mode bool|contacts [--threads N] [--out FILE] [--max-contacts M]
 *               [--near-out FILE] [--gaps-out FILE]
 *   bench_robot --urdf URDF [--srdf SRDF] --world SCENE.yaml --motions FILE
 *               --resolution R [--threads N] [--out FILE]
 *
 * Motions (the FCL reference for `tandem motions`, same inputs and outputs): a line
 * of FILE is a motion, 2 J numbers (start, then end); its states are robot/motions.h's
 * (n = max(2, ceil(max_j |b_j - a_j| / R) + 1), q_k = a + k/(n-1)(b - a)), checked
 * first to last in bool mode, stopping at the first colliding one; --out gets one line
 * per motion, -1 or that k. The threads take motions in turn. The states' forward
 * kinematics is done before the timed loop, as `tandem motions` leaves it out of its
 * seconds; the last line counts motions: "queries=M seconds=S qps=Q colliding=C".
 *
 * Same inputs, same --out format and the same last stdout line as `tandem check
 * --urdf`: one line per configuration (0/1 in bool mode, a count in contacts mode),
 * then "queries=N seconds=S qps=Q colliding=C", S timing the collision calls only
 * (not loading, model building, forward kinematics or output).
 *
 * The model is robot/'s, so that only the collision test differs: the URDF and SRDF
 * (robot/urdf.h), the planning scene (robot/planning_scene.h) and the robot scene
 * (robot/robot_scene.h) are built exactly as `tandem check --urdf` builds them; from
 * that scene are taken the checked pairs (scene->checks: every element against every
 * world shape and every element of another link, minus same-link pairs, SRDF-disabled
 * pairs and ACM-allowed pairs), the world shapes' poses (frames resolved as there) and
 * the elements' poses per configuration (tdm_robot_scene_poses: forward kinematics).
 * Only the geometry handed to FCL is FCL's own:
 *   - robot mesh elements: fcl::BVHModel<OBBRSS> of the file read by tools'
 *     tdm_mesh_load_file (raw origin), scaled per axis as robot_scene.c scales it;
 *   - URDF box / cylinder / sphere / capsule elements and MoveIt box / cylinder /
 *     sphere / cone primitives: fcl::Box / Cylinder / Sphere / Capsule / Cone, exact and SOLID
 *     (Tandem meshes curved primitives, containing the true shape within 0.1 mm, and
 *     treats primitives as solids too: workpile/solid.h);
 *   - world inline meshes: BVHModel<OBBRSS> of the double vertices as read.
 * Before each fcl::collide the two objects' world AABBs are compared (what a
 * broad phase would do); FCL's GJK solver is its default (libccd).
 *
 * Contacts mode. FCL is asked for up to M contacts per pair (enable_contact off);
 * what it reports, summed over the checked pairs and capped at M per configuration:
 *   - mesh-mesh pair: one per intersecting triangle pair (FCL's float triangle test),
 *     the quantity Tandem counts;
 *   - mesh-primitive pair: one per mesh triangle that meets the SOLID primitive (not
 *     triangle pairs against a tessellation: NOT comparable with Tandem's count);
 *   - primitive-primitive pair: 1 if they meet.
 * So contacts counts are comparable with Tandem only where every colliding pair is
 * mesh-mesh (self collision of a mesh robot); otherwise compare them as booleans
 * (count > 0), which bench/run_robot.sh does.
 *
 * --near-out FILE (after the timed loop, not timed): one line per configuration,
 * the smallest fcl::distance over its checked pairs that have a curved primitive
 * (sphere, cylinder, capsule, cone) on either side, in metres ("inf" when the scene has
 * none). bench/run_robot_all.sh asks it for the configurations Tandem calls
 * colliding and FCL free, to tell whether each lies within the tessellation's
 * 0.1 mm of a curved primitive (the difference issue 13 allows).
 *
 * --gaps-out FILE (after the timed loop, not timed): one line per configuration,
 * three numbers: the smallest fcl::distance over its checked pairs with no curved
 * primitive, with one, and with two (curved on both sides), in metres, "inf" where
 * there is no such pair. bench/random_robots.py tells by them whether a configuration
 * Tandem calls colliding and FCL free is within what Tandem's meshes allow: 0.1 mm
 * per curved side, ~1 um of rounding otherwise (workpile/solid.h). FCL measures no
 * pair with a plane: such a pair's distance is the other object's gap to the plane
 * along its normal, from its vertices or its primitive's support (plane_gap). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcl/narrowphase/collision_object.h>
#include <fcl/narrowphase/distance.h>
#include <fcl/geometry/bvh/BVH_model.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/cone.h>
#include <fcl/geometry/shape/cylinder.h>
#include <fcl/geometry/shape/plane.h>
#include <fcl/geometry/shape/sphere.h>

extern "C" {
#include "geom/mesh.h"
#include "geom/primitive.h"
#include "robot/kinematics.h"
#include "robot/motions.h"
#include "robot/robot_scene.h"
#include "robot/urdf.h"
}
#include "bench/fcl_robot.h"
#include "robot/planning_scene.h"
#include "tools/io.h"

namespace {

void usage()
{
    fprintf(stderr,
            "usage: bench_robot --urdf URDF [--srdf SRDF] --world SCENE.yaml --configs FILE --mode bool|contacts\n"
            "                   [--threads N] [--out FILE] [--max-contacts M] [--near-out FILE] [--gaps-out FILE]\n"
            "       bench_robot --urdf URDF [--srdf SRDF] --world SCENE.yaml --motions FILE --resolution R\n"
            "                   [--threads N] [--out FILE]\n");
}

/* The distance between a plane object and another (FCL's distance has no plane pairs): the
 * other's extent along the plane's normal, from its vertices (a mesh) or its support (a
 * primitive); 0 when the extent holds the plane. INFINITY for two planes. */
static double plane_gap(const fcl::CollisionObjectd *plane, const fcl::CollisionObjectd *other)
{
    const auto *pl = static_cast<const fcl::Planed *>(plane->collisionGeometry().get());
    const fcl::Transform3d &tp = plane->getTransform(), &to = other->getTransform();
    const fcl::Vector3d n = tp.linear() * pl->n;
    const double d = pl->d + n.dot(tp.translation());
    const fcl::Vector3d c = to.translation();
    const fcl::Matrix3d R = to.linear();
    const fcl::CollisionGeometryd *g = other->collisionGeometry().get();
    double lo, hi;
    auto around = [&](double centre, double extent) { lo = centre - extent, hi = centre + extent; };
    const fcl::Vector3d z = R.col(2);
    const double nz = std::fabs(n.dot(z)), side = std::sqrt(std::max(0.0, 1 - nz * nz));
    switch (g->getNodeType()) {
    case fcl::GEOM_PLANE: return INFINITY;
    case fcl::GEOM_BOX: {
        const auto *b = static_cast<const fcl::Boxd *>(g);
        double e = 0;
        for (int i = 0; i < 3; i++) e += std::fabs(n.dot(R.col(i))) * b->side[i] / 2;
        around(n.dot(c), e);
        break;
    }
    case fcl::GEOM_SPHERE: around(n.dot(c), static_cast<const fcl::Sphered *>(g)->radius); break;
    case fcl::GEOM_CYLINDER: {
        const auto *y = static_cast<const fcl::Cylinderd *>(g);
        around(n.dot(c), y->lz / 2 * nz + y->radius * side);
        break;
    }
    case fcl::GEOM_CAPSULE: {
        const auto *y = static_cast<const fcl::Capsuled *>(g);
        around(n.dot(c), y->lz / 2 * nz + y->radius);
        break;
    }
    case fcl::GEOM_CONE: { /* apex at +lz/2 on its axis, base circle at -lz/2 */
        const auto *y = static_cast<const fcl::Coned *>(g);
        const double apex = n.dot(c + z * (y->lz / 2)), base = n.dot(c - z * (y->lz / 2)), rim = y->radius * side;
        lo = std::min(apex, base - rim), hi = std::max(apex, base + rim);
        break;
    }
    default: { /* a mesh: its vertices (no triangle reaches nearer the plane than its nearest vertex) */
        const auto *m = dynamic_cast<const fcl::BVHModel<fcl::OBBRSSd> *>(g);
        if (!m || m->num_vertices == 0) return INFINITY;
        lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < m->num_vertices; i++) {
            const double v = n.dot(to * m->vertices[i]);
            lo = std::min(lo, v), hi = std::max(hi, v);
        }
    }
    }
    return lo <= d && d <= hi ? 0.0 : std::min(std::fabs(lo - d), std::fabs(hi - d));
}

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* Runs worker on `threads` threads (the caller's alone for one) and returns the
 * wall time until all have returned. */
template <class F> double timed_on_threads(F &worker, long threads)
{
    double t0 = now();
    if (threads <= 1) worker();
    else {
        std::vector<std::thread> ts;
        for (long t = 0; t < threads; t++) ts.emplace_back(std::ref(worker));
        for (auto &t : ts) t.join();
    }
    return now() - t0;
}

/* The motions mode (see the top): states' poses made first, then checked in order
 * per motion on `threads` threads. Returns main's exit status. */
int run_motions(const tdm_robot_scene *rs, const tdm_robot *robot, const tdm_fcl_model &model,
                const std::vector<double> &mot, size_t n, size_t n_q, double r, long threads, const char *out_path)
{
    const size_t n_el = rs->n_movable;
    std::vector<uint64_t> first(n + 1, 0); /* motion i's states: first[i] .. first[i + 1] - 1 */
    for (size_t i = 0; i < n; i++) {
        uint64_t m = tdm__motion_states(&mot[2 * i * n_q], &mot[(2 * i + 1) * n_q], n_q, r);
        if (m == 0) {
            fprintf(stderr, "bench_robot: motion %zu needs more than %llu states\n", i + 1,
                    (unsigned long long)TDM_MOTION_MAX_STATES);
            return 1;
        }
        first[i + 1] = first[i] + m;
    }
    if (first[n] > (64ull << 30) / (n_el ? n_el : 1) / sizeof(tdm_xform)) {
        fprintf(stderr, "bench_robot: %llu states are more poses than this reference keeps (64 GiB)\n",
                (unsigned long long)first[n]);
        return 1;
    }
    std::vector<tdm_xform> poses(std::max<size_t>(1, first[n] * n_el)), links(robot->n_links);
    std::vector<double> q(n_q);
    for (size_t i = 0; i < n; i++)
        for (uint64_t k = 0; k < first[i + 1] - first[i]; k++) {
            tdm__motion_state(&mot[2 * i * n_q], &mot[(2 * i + 1) * n_q], n_q, k, first[i + 1] - first[i], q.data());
            int rc = tdm_robot_scene_poses(rs, q.data(), n_q, links.data(), &poses[(first[i] + k) * n_el]);
            if (rc) { fprintf(stderr, "bench_robot: motion %zu, state %llu: %s\n", i + 1, (unsigned long long)k, tdm_strerror(rc)); return 1; }
        }
    std::vector<int64_t> answer(n, -1);
    std::atomic<size_t> next(0);
    auto worker = [&]() {
        tdm_fcl_checker checker(model);
        for (size_t i; (i = next.fetch_add(1)) < n;)
            for (uint64_t s = first[i]; s < first[i + 1]; s++)
                if (checker.check(&poses[s * n_el])) {
                    answer[i] = (int64_t)(s - first[i]);
                    break;
                }
    };
    double seconds = timed_on_threads(worker, threads);
    size_t colliding = 0;
    for (size_t i = 0; i < n; i++) colliding += answer[i] >= 0;
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f) { fprintf(stderr, "bench_robot: cannot write %s\n", out_path); return 1; }
        for (size_t i = 0; i < n; i++) fprintf(f, "%lld\n", (long long)answer[i]);
        if (fclose(f)) { fprintf(stderr, "bench_robot: cannot write %s\n", out_path); return 1; }
    }
    printf("# bench_robot fcl=%s objects=%u elements=%zu checked_pairs=%zu threads=%ld motions=%zu states=%llu "
           "resolution=%g\n", TDM_FCL_VERSION, rs->n_objects, n_el, model.checks.size(), threads, n,
           (unsigned long long)first[n], r);
    printf("queries=%zu seconds=%.6f qps=%.1f colliding=%zu\n", n, seconds, seconds > 0 ? (double)n / seconds : 0.0,
           colliding);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL, *world = NULL, *configs = NULL, *mode_s = NULL, *out_path = NULL,
               *near_path = NULL, *gaps_path = NULL, *motions = NULL;
    double resolution = 0;
    long threads = 1;
    unsigned long max_contacts = 1000000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) { usage(); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "--urdf")) urdf = v;
        else if (!strcmp(a, "--srdf")) srdf = v;
        else if (!strcmp(a, "--world")) world = v;
        else if (!strcmp(a, "--configs")) configs = v;
        else if (!strcmp(a, "--motions")) motions = v;
        else if (!strcmp(a, "--resolution")) resolution = strtod(v, NULL);
        else if (!strcmp(a, "--mode")) mode_s = v;
        else if (!strcmp(a, "--out")) out_path = v;
        else if (!strcmp(a, "--near-out")) near_path = v;
        else if (!strcmp(a, "--gaps-out")) gaps_path = v;
        else if (!strcmp(a, "--threads")) threads = strtol(v, NULL, 10);
        else if (!strcmp(a, "--max-contacts")) max_contacts = strtoul(v, NULL, 10);
        else { usage(); return 2; }
    }
    if (motions && !mode_s) mode_s = "bool";
    if (!urdf || !world || !configs == !motions || !mode_s || (strcmp(mode_s, "bool") && strcmp(mode_s, "contacts")) ||
        threads < 0 || max_contacts < 1 || (motions && (!(resolution > 0) || !std::isfinite(resolution) ||
                                                        strcmp(mode_s, "bool") || near_path || gaps_path))) {
        usage();
        return 2;
    }
    const bool contacts = !strcmp(mode_s, "contacts");
    if (threads == 0) threads = (long)std::max(1u, std::thread::hardware_concurrency());

    char err[512];
    tdm_robot *robot = NULL;
    tdm_planning_scene *ps = NULL;
    tdm_robot_scene *rs = NULL;
    tdm_fcl_meshes lctx;
    if (tdm_robot_load(urdf, srdf, &robot, err, sizeof err)) { fprintf(stderr, "bench_robot: robot: %s\n", err); return 1; }
    if (tdm_planning_scene_read(world, &ps, err, sizeof err)) { fprintf(stderr, "bench_robot: world: %s\n", err); return 1; }
    if (tdm_robot_scene_create(robot, ps, tdm_fcl_load_mesh, &lctx, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err)) {
        fprintf(stderr, "bench_robot: scene: %s\n", err);
        return 1;
    }
    const size_t n_q = robot->n_active, n_el = rs->n_movable;

    /* Configurations (or motions: two a line): the same reader rules as tandem check
       (numbers, # comments, blank lines). */
    std::vector<double> cfg;
    const char *input = motions ? motions : configs;
    const size_t per_line = motions ? 2 * n_q : n_q;
    {
        FILE *f = fopen(input, "r");
        if (!f) { fprintf(stderr, "bench_robot: cannot read %s\n", input); return 1; }
        char line[65536];
        size_t lineno = 0;
        while (fgets(line, sizeof line, f)) {
            lineno++;
            char *p = line;
            while (*p == ' ' || *p == '\t') p++;
            if (*p == '#' || *p == '\n' || *p == '\r' || !*p) continue;
            size_t k = 0;
            for (;;) {
                char *e;
                double v = strtod(p, &e);
                if (e == p) break;
                if (!std::isfinite(v)) { fprintf(stderr, "bench_robot: %s:%zu: value not finite\n", input, lineno); return 1; }
                cfg.push_back(v);
                k++;
                p = e;
            }
            while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
            if (*p || k != per_line) {
                fprintf(stderr, "bench_robot: %s:%zu: %zu values, want %zu (the robot has %zu active joints)\n", input,
                        lineno, k, per_line, n_q);
                return 1;
            }
        }
        fclose(f);
    }
    const size_t n = cfg.size() / (per_line ? per_line : 1);

    /* FCL geometry by scene object id (bench/fcl_robot.h). */
    tdm_fcl_model model;
    {
        std::vector<tdm_fcl_geom> robot_geoms;
        if (tdm_fcl_robot_geoms(robot, lctx.meshes, &robot_geoms, err, sizeof err) ||
            tdm_fcl_model_build(ps, rs, robot_geoms, &model, err, sizeof err)) {
            fprintf(stderr, "bench_robot: %s\n", err);
            return 1;
        }
    }

    if (motions) {
        int rc = run_motions(rs, robot, model, cfg, n, n_q, resolution, threads, out_path);
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
        tdm_robot_free(robot);
        return rc;
    }

    /* Poses of every configuration's elements, before the timed loop (as tandem check). */
    std::vector<tdm_xform> poses(std::max<size_t>(1, n * n_el)), links(robot->n_links);
    for (size_t i = 0; i < n; i++) {
        int rc = tdm_robot_scene_poses(rs, &cfg[i * n_q], n_q, links.data(), &poses[i * n_el]);
        if (rc) { fprintf(stderr, "bench_robot: configuration %zu: %s\n", i + 1, tdm_strerror(rc)); return 1; }
    }
    std::vector<uint32_t> answer(n);
    std::atomic<size_t> next(0);
    const size_t CHUNK = 64;
    auto worker = [&]() {
        tdm_fcl_checker checker(model);
        for (;;) {
            size_t lo = next.fetch_add(CHUNK);
            if (lo >= n) break;
            size_t hi = std::min(n, lo + CHUNK);
            for (size_t i = lo; i < hi; i++) {
                uint64_t total = checker.check(&poses[i * n_el], contacts, max_contacts);
                answer[i] = (uint32_t)total;
            }
        }
    };
    double seconds = timed_on_threads(worker, threads);

    size_t colliding = 0;
    for (size_t i = 0; i < n; i++) colliding += answer[i] > 0;
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f) { fprintf(stderr, "bench_robot: cannot write %s\n", out_path); return 1; }
        for (size_t i = 0; i < n; i++) fprintf(f, "%u\n", answer[i]);
        if (fclose(f)) { fprintf(stderr, "bench_robot: cannot write %s\n", out_path); return 1; }
    }
    if (near_path || gaps_path) {
        /* each checked pair's number of curved sides (sphere, cylinder, capsule, cone) */
        auto is_curved = [&](uint32_t id) {
            fcl::NODE_TYPE t = model.geoms[id]->getNodeType();
            return t == fcl::GEOM_SPHERE || t == fcl::GEOM_CYLINDER || t == fcl::GEOM_CAPSULE || t == fcl::GEOM_CONE;
        };
        std::vector<int> curved_sides;
        for (const auto &pr : model.checks) curved_sides.push_back((int)is_curved(pr.first) + (int)is_curved(pr.second));
        std::vector<std::unique_ptr<fcl::CollisionObjectd>> objs(rs->n_objects);
        for (uint32_t id = 0; id < rs->n_objects; id++) {
            objs[id].reset(new fcl::CollisionObjectd(model.geoms[id]));
            if (model.slot_of[id] == UINT32_MAX) objs[id]->setTransform(model.fixed_pose[id]);
        }
        FILE *fn = near_path ? fopen(near_path, "w") : NULL, *fg = gaps_path ? fopen(gaps_path, "w") : NULL;
        if ((near_path && !fn) || (gaps_path && !fg)) {
            fprintf(stderr, "bench_robot: cannot write %s\n", near_path && !fn ? near_path : gaps_path);
            return 1;
        }
        fcl::DistanceRequestd dreq(false);
        for (size_t i = 0; i < n; i++) {
            const tdm_xform *x = &poses[i * n_el];
            for (uint32_t id = 0; id < rs->n_objects; id++)
                if (model.slot_of[id] != UINT32_MAX) objs[id]->setTransform(tdm_fcl_transform(x[model.slot_of[id]]));
            double best[3] = {INFINITY, INFINITY, INFINITY}; /* by curved sides */
            for (size_t k = 0; k < model.checks.size(); k++) {
                if (!gaps_path && !curved_sides[k]) continue;
                const auto &pr = model.checks[k];
                double d;
                if (model.plane[pr.first] || model.plane[pr.second]) { /* FCL measures no plane pair */
                    bool first = model.plane[pr.first];
                    d = plane_gap(objs[first ? pr.first : pr.second].get(), objs[first ? pr.second : pr.first].get());
                } else {
                    fcl::DistanceResultd dres;
                    d = fcl::distance(objs[pr.first].get(), objs[pr.second].get(), dreq, dres);
                }
                best[curved_sides[k]] = std::min(best[curved_sides[k]], d);
            }
            if (fn) fprintf(fn, "%.9g\n", std::min(best[1], best[2]));
            if (fg) fprintf(fg, "%.9g %.9g %.9g\n", best[0], best[1], best[2]);
        }
        if ((fn && fclose(fn)) || (fg && fclose(fg))) {
            fprintf(stderr, "bench_robot: cannot write %s\n", fn ? near_path : gaps_path);
            return 1;
        }
    }
    printf("# bench_robot fcl=%s objects=%u elements=%zu checked_pairs=%zu threads=%ld mode=%s\n", TDM_FCL_VERSION,
           rs->n_objects, n_el, model.checks.size(), threads, mode_s);
    printf("queries=%zu seconds=%.6f qps=%.1f colliding=%zu\n", n, seconds, seconds > 0 ? (double)n / seconds : 0.0,
           colliding);
    tdm_robot_scene_destroy(rs);
    tdm_planning_scene_free(ps);
    tdm_robot_free(robot);
    return 0;
}
