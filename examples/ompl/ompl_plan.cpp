/* ompl_plan: OMPL planners over Tandem (issue 13, point 9), on MotionBenchMaker
 * problems: RRTConnect through OMPL, or a roadmap built in large batches
 * (roadmap.h), with a Tandem checker (tandemd through libtandem) or an FCL
 * checker in process; every returned path re-checked by FCL at a fine
 * resolution. README.md says how to build and run it, and what each flag does.
 *
 *   ompl_plan --urdf URDF [--srdf SRDF] [--server ADDR] [--planner rrtconnect|rrtconnect-fused|prm]
 *             [--checker tandem|fcl] [--time-limit S] [--seed N] [--planners P]
 *             [--fcl-threads T] [--nn-threads T] [--resolution R] [--recheck-resolution R]
 *             [--per-scenario K] [--prm-samples N] [--prm-k K] [--path-out DIR] [--motion-any 0|1]
 *             [--ring auto|off|on|BYTES] [--ring-spin-us US] [--ephemeral-scenes 0|1]
 *             [--local-states N] [--local-probes K]
 *             PROBLEM...
 *
 * Output: one line per problem, in the order listed, `scenario problem solved
 * seconds path_states checks`, then one summary line (README.md). Exit status 0
 * when every problem ran (solved or not), 1 when a problem could not be set up or
 * a checker failed, 2 on a usage error. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <ompl/base/ScopedState.h>
#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/geometric/SimpleSetup.h>
#include <ompl/geometric/planners/rrt/RRTConnect.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>

extern "C" {
#include "geom/primitive.h"
#include "robot/motions.h"
#include "tools/io.h"
}
#include "bench/fcl_robot.h"
#include "checker.h"
#include "fcl_checker.h"
#include "problems.h"
#include "roadmap.h"
#include "rrt_fused.h"
#include "scene_leases.h"
#include <tandem/tandem.h>
#include "tandem_checker.h"

namespace ob = ompl::base;
namespace og = ompl::geometric;

namespace {

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void usage()
{
    fprintf(stderr,
            "usage: ompl_plan --urdf URDF [--srdf SRDF] [--server ADDR] [--planner rrtconnect|rrtconnect-fused|prm]\n"
            "                 [--checker tandem|fcl] [--time-limit S] [--seed N] [--planners P]\n"
            "                 [--fcl-threads T] [--nn-threads T] [--resolution R] [--recheck-resolution R]\n"
            "                 [--per-scenario K] [--prm-samples N] [--prm-k K] [--path-out DIR] [--motion-any 0|1]\n"
            "                 [--ring auto|off|on|BYTES] [--ring-spin-us US] [--ephemeral-scenes 0|1]\n"
            "                 [--local-states N] [--local-probes K]\n"
            "                 PROBLEM...\n"
            "  PROBLEM: a requestNNNN.yaml (sceneNNNN.yaml beside it), a scenario folder, or a folder of them\n");
}

struct options {
    const char *urdf = NULL, *srdf = NULL, *server = NULL, *path_out = NULL;
    bool prm = false, fcl = false, fused = false; /* fused: rrt_fused.h's RRTConnect */
    bool motion_any = true; /* Tandem: validity-only motion checks ask for any colliding state */
    double time_limit = 10, resolution = 0.05, recheck = 0.005;
    uint64_t seed = 1;
    long planners = 1, fcl_threads = 1;
    unsigned nn_threads = 0; /* the roadmap's neighbour search (0: std::thread::hardware_concurrency()) */
    size_t per_scenario = 0, prm_samples = 2000, prm_k = 10;
    long ring = -2;        /* Tandem on a unix: address: shared-memory rings of this many bytes (0: the
                              server's default), -1: the socket (tdm_client_ring); -2 (auto): the
                              server's default rings on a unix: address when it offers them */
    long ring_spin_us = 0; /* how long a planner polls its reply ring before it sleeps */
    bool ephemeral = true; /* Tandem: each problem's scene put ephemeral (held in memory, never written) */
    size_t local_states = 1; /* Tandem: state batches of at most this many answered in process by libtandem's
                                local engine (tandem_checker.h, "Local states"); 0: every one by tandemd */
    unsigned local_probes = 0; /* Tandem: any-state motions' first K states checked there too ("Local probes") */
    bool local_set = false;    /* --local-states or --local-probes given */
};

/* Robot meshes read once (raw), handed to each robot scene as a copy. */
struct mesh_cache {
    std::mutex mu;
    std::map<std::string, tdm_mesh *> meshes;
    ~mesh_cache()
    {
        for (auto &m : meshes) tdm_mesh_free(m.second);
    }
};

int cached_load(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    mesh_cache *mc = static_cast<mesh_cache *>(ctx);
    std::lock_guard<std::mutex> lock(mc->mu);
    auto it = mc->meshes.find(path);
    if (it == mc->meshes.end()) {
        tdm_mesh *m = NULL;
        int rc = tdm_mesh_load_file(path, TDM_ORIGIN_RAW, &m, err, errlen);
        if (rc) return rc;
        it = mc->meshes.emplace(path, m).first;
    }
    const tdm_mesh *m = it->second;
    return tdm_mesh_create(m->verts, m->n_verts, m->tris, m->n_tris, NULL, out, err, errlen);
}

/* What the whole run shares, read only once set up. */
struct shared_ctx {
    scene_leases scenes; /* Tandem: the robot scenes this run stores, shared by its planners */
    options o;
    tdm_robot *robot = NULL;
    std::vector<tdm_fcl_geom> robot_geoms;
    mesh_cache meshes;
    uint8_t robot_id[TDM_ID_BYTES];
    std::vector<double> lo, hi;
    std::map<tdm_client *, std::string> conn_names; /* set before the planners start */
    tdm_local_robot *local_robot = NULL; /* --local-states/probes: libtandem's copy of the stored robot */
    ~shared_ctx() { tdm_local_robot_free(local_robot); }
};

/* One problem's local model: its planning scene, the robot scene and FCL's model. */
struct local_scene {
    tdm_planning_scene *ps = NULL;
    tdm_robot_scene *rs = NULL;
    tdm_fcl_model model;
    ~local_scene()
    {
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
    }
    int open(shared_ctx &sh, const problem_file &pf, bool fcl, std::string *err)
    {
        char e[768];
        if (tdm_planning_scene_read(pf.scene.c_str(), &ps, e, sizeof e)) {
            *err = e;
            return -1;
        }
        if (!fcl) return 0;
        if (tdm_robot_scene_create(sh.robot, ps, cached_load, &sh.meshes, TDM_PRIMITIVE_TOLERANCE, &rs, e, sizeof e) ||
            tdm_fcl_model_build(ps, rs, sh.robot_geoms, &model, e, sizeof e)) {
            *err = pf.scene + ": " + e;
            return -1;
        }
        return 0;
    }
};

struct outcome {
    bool ran = false, solved = false, recheck_failed = false;
    double seconds = 0, build_s = 0, states_s = 0, neighbours_s = 0, motions_s = 0;
    double setup_s = 0; /* Tandem: the scene's put and delete, waits for planners of the same scene included */
    double busy_s = 0;  /* the problem's whole time on its planner: its files, its scene, its solve */
    double check_s = 0; /* RRTConnect: time inside the OMPL validity checker and motion validator */
    uint64_t state_calls = 0; /* ... of it, the validity checker's calls and time */
    double state_s = 0;
    size_t path_states = 0;
    uint64_t checks = 0, requests = 0;
    std::vector<double> start, goal, path;
    std::string error;
};

/* Plans one problem with checker c; fills o (path, seconds, checks). */
void plan(shared_ctx &sh, plan_checker *c, const std::vector<double> &start, const std::vector<double> &goal,
          uint64_t seed, outcome *out)
{
    const options &o = sh.o;
    const size_t j = start.size();
    if (o.prm) {
        roadmap_opts ro;
        ro.samples = o.prm_samples;
        ro.k = o.prm_k;
        ro.resolution = o.resolution;
        ro.time_limit = o.time_limit;
        ro.seed = seed;
        ro.nn_threads = o.nn_threads;
        roadmap_result rr;
        if (roadmap_solve(c, sh.lo, sh.hi, start, goal, ro, &rr) == 0) {
            out->solved = rr.solved;
            out->path = rr.path;
            out->seconds = rr.seconds;
            out->build_s = rr.build_s;
            out->states_s = rr.states_s;
            out->neighbours_s = rr.neighbours_s;
            out->motions_s = rr.motions_s;
        }
        return;
    }
    auto space = std::make_shared<ob::RealVectorStateSpace>((unsigned)j);
    ob::RealVectorBounds b((unsigned)j);
    for (size_t i = 0; i < j; i++) {
        b.setLow((unsigned)i, sh.lo[i]);
        b.setHigh((unsigned)i, sh.hi[i]);
    }
    space->setBounds(b);
    og::SimpleSetup ss(space);
    ob::SpaceInformationPtr si = ss.getSpaceInformation();
    ss.setStateValidityChecker(std::make_shared<checker_validity>(si, c));
    si->setMotionValidator(std::make_shared<checker_motion>(si, c, o.resolution));
    /* OMPL's own notion of the resolution: a fraction of the space's extent */
    si->setStateValidityCheckingResolution(std::min(1.0, o.resolution / space->getMaximumExtent()));
    if (o.fused) ss.setPlanner(std::make_shared<rrt_fused>(si));
    else ss.setPlanner(std::make_shared<og::RRTConnect>(si));
    ob::ScopedState<> s(space), g(space);
    for (size_t i = 0; i < j; i++) {
        s[(unsigned)i] = start[i];
        g[(unsigned)i] = goal[i];
    }
    ss.setStartAndGoalStates(s, g);
    double t0 = now();
    ob::PlannerStatus st = ss.solve(o.time_limit);
    out->seconds = now() - t0;
    if (st == ob::PlannerStatus::EXACT_SOLUTION) {
        const og::PathGeometric &p = ss.getSolutionPath();
        for (size_t k = 0; k < p.getStateCount(); k++) {
            const double *v = p.getState((unsigned)k)->as<ob::RealVectorStateSpace::StateType>()->values;
            out->path.insert(out->path.end(), v, v + j);
        }
        out->solved = true;
    }
}

/* Sets up and plans problem pf on this planner's connection (Tandem) or in process. */
void run_problem(shared_ctx &sh, tdm_client *c, tdm_local *local, const problem_file &pf, uint64_t seed,
                 outcome *out)
{
    const options &o = sh.o;
    local_scene ls;
    tdm_motion_request *req = NULL;
    char e[768];
    if (tdm_motion_request_read(pf.request.c_str(), &req, e, sizeof e)) {
        out->error = e;
        return;
    }
    std::unique_ptr<tdm_motion_request, void (*)(tdm_motion_request *)> req_guard(req, tdm_motion_request_free);
    if (ls.open(sh, pf, o.fcl, &out->error) < 0) return;
    if (problem_endpoints(sh.robot, ls.ps, req, pf.request.c_str(), &out->start, &out->goal, &out->error) < 0) return;
    if (o.fcl) {
        fcl_plan_checker fc(ls.rs, &ls.model, (int)o.fcl_threads);
        plan(sh, &fc, out->start, out->goal, seed, out);
        out->checks = fc.checks;
        out->requests = fc.requests;
        out->check_s = fc.check_s;
        out->state_calls = fc.state_calls;
        out->state_s = fc.state_s;
        out->error = fc.error();
    } else {
        /* the scene stored, or shared with the planners of this run that use the same
         * scene file (scene_leases.h); only those wait for each other */
        scene_leases::lease lease;
        double t_setup = now();
        int rc = sh.scenes.acquire(c, pf.scenario.c_str(), sh.robot_id, pf.scene.c_str(), &lease, &out->error);
        out->setup_s = now() - t_setup;
        if (rc < 0) return;
        tandem_checker tc(c, lease.id, sh.robot->n_active, sh.o.motion_any);
        /* --local-states/probes: libtandem's copy of the stored scene, for the local engine's few states */
        tdm_local_scene *local_sc = NULL;
        if (local) {
            if (tdm_local_scene_create_file(local, sh.local_robot, pf.scene.c_str(), &local_sc) ||
                tc.answer_states_locally(local, local_sc, o.local_states, o.local_probes) < 0) {
                out->error = local_sc ? tc.error() : std::string("local states: ") + tdm_local_errstr(local);
                tdm_local_scene_free(local_sc);
                std::string del_err;
                sh.scenes.release(c, &lease, &del_err);
                return;
            }
        }
        std::unique_ptr<tdm_local_scene, void (*)(tdm_local_scene *)> local_guard(local_sc, tdm_local_scene_free);
        auto named = sh.conn_names.find(c); /* read only while the planners run */
        if (named != sh.conn_names.end()) tc.trace_as(named->second);
        plan(sh, &tc, out->start, out->goal, seed, out);
        out->checks = tc.checks;
        out->requests = tc.requests;
        out->check_s = tc.check_s;
        out->state_calls = tc.state_calls;
        out->state_s = tc.state_s;
        out->error = tc.error();
        t_setup = now();
        std::string del_err;
        if (sh.scenes.release(c, &lease, &del_err) < 0 && out->error.empty()) out->error = del_err;
        out->setup_s += now() - t_setup;
    }
    if (!out->error.empty()) {
        out->solved = false;
        return;
    }
    out->ran = true;
    out->path_states = out->path.size() / (out->start.empty() ? 1 : out->start.size());
}

/* The path re-checked by FCL: its ends are the problem's start and goal, and every
 * state of every segment at resolution o.recheck is free. */
void recheck(shared_ctx &sh, const problem_file &pf, outcome *out)
{
    if (!out->solved) return;
    const size_t j = out->start.size(), n = out->path_states;
    local_scene ls;
    std::string err;
    if (ls.open(sh, pf, true, &err) < 0) {
        out->error = "recheck: " + err;
        out->solved = false;
        out->recheck_failed = true;
        return;
    }
    bool ok = n >= 2;
    for (size_t x = 0; ok && x < j; x++)
        ok = fabs(out->path[x] - out->start[x]) <= 1e-6 && fabs(out->path[(n - 1) * j + x] - out->goal[x]) <= 1e-6;
    if (!ok) {
        out->error = "recheck: the path does not go from the start to the goal";
    } else {
        fcl_plan_checker fc(ls.rs, &ls.model, 1);
        std::vector<double> ab(2 * j);
        for (size_t s = 0; ok && s + 1 < n; s++) {
            std::copy(out->path.begin() + s * j, out->path.begin() + (s + 2) * j, ab.begin());
            int64_t k = 0;
            if (fc.motions(ab.data(), 1, sh.o.recheck, true, &k, NULL) < 0 || k >= 0) {
                ok = false;
                out->error = "recheck: FCL finds segment " + std::to_string(s) + " colliding at state " +
                             std::to_string(k) + " (resolution " + std::to_string(sh.o.recheck) + ")";
            }
        }
    }
    if (!ok) {
        out->solved = false;
        out->recheck_failed = true;
    }
}

int write_path(const char *dir, const problem_file &pf, const outcome &r)
{
    std::string p = std::string(dir) + "/" + pf.scenario + "_" + pf.name + ".path";
    FILE *f = fopen(p.c_str(), "w");
    if (!f) return -1;
    const size_t j = r.start.size();
    for (size_t s = 0; s < r.path_states; s++)
        for (size_t x = 0; x < j; x++) fprintf(f, "%.17g%c", r.path[s * j + x], x + 1 == j ? '\n' : ' ');
    return fclose(f) ? -1 : 0;
}

double quantile(std::vector<double> v, double q)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t i = (size_t)ceil(q * (double)v.size());
    return v[i ? i - 1 : 0]; /* nearest rank */
}

bool parse_num(const char *s, double lo, double hi, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e || errno || !isfinite(v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    shared_ctx sh;
    options &o = sh.o;
    std::vector<std::string> paths;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a.compare(0, 2, "--")) {
            paths.push_back(a);
            continue;
        }
        if (a == "--help") {
            usage();
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "ompl_plan: %s needs a value\n", a.c_str());
            usage();
            return 2;
        }
        const char *v = argv[++i];
        double d = 0;
        bool ok = true;
        if (a == "--urdf") o.urdf = v;
        else if (a == "--srdf") o.srdf = v;
        else if (a == "--server") o.server = v;
        else if (a == "--path-out") o.path_out = v;
        else if (a == "--planner") {
            ok = !strcmp(v, "rrtconnect") || !strcmp(v, "rrtconnect-fused") || !strcmp(v, "prm");
            o.prm = !strcmp(v, "prm");
            o.fused = !strcmp(v, "rrtconnect-fused");
        } else if (a == "--checker") {
            ok = !strcmp(v, "tandem") || !strcmp(v, "fcl");
            o.fcl = !strcmp(v, "fcl");
        } else if (a == "--time-limit") ok = parse_num(v, 1e-3, 1e6, &o.time_limit);
        else if (a == "--resolution") ok = parse_num(v, 1e-6, 10, &o.resolution);
        else if (a == "--recheck-resolution") ok = parse_num(v, 1e-6, 10, &o.recheck);
        else if (a == "--seed") ok = parse_num(v, 0, 9007199254740992.0, &d), o.seed = (uint64_t)d;
        else if (a == "--planners") ok = parse_num(v, 1, 4096, &d) && d == floor(d), o.planners = (long)d;
        else if (a == "--fcl-threads") ok = parse_num(v, 1, 4096, &d) && d == floor(d), o.fcl_threads = (long)d;
        else if (a == "--nn-threads") ok = parse_num(v, 1, 4096, &d) && d == floor(d), o.nn_threads = (unsigned)d;
        else if (a == "--per-scenario") ok = parse_num(v, 0, 1e9, &d) && d == floor(d), o.per_scenario = (size_t)d;
        else if (a == "--prm-samples") ok = parse_num(v, 1, 1e8, &d) && d == floor(d), o.prm_samples = (size_t)d;
        else if (a == "--motion-any") ok = (!strcmp(v, "0") || !strcmp(v, "1")), o.motion_any = !strcmp(v, "1");
        else if (a == "--ring") {
            if (!strcmp(v, "auto")) o.ring = -2;
            else if (!strcmp(v, "off")) o.ring = -1;
            else if (!strcmp(v, "on")) o.ring = 0;
            else ok = parse_num(v, 65536, 1 << 30, &d) && d == floor(d), o.ring = (long)d;
        } else if (a == "--ephemeral-scenes") ok = (!strcmp(v, "0") || !strcmp(v, "1")), o.ephemeral = !strcmp(v, "1");
        else if (a == "--ring-spin-us") ok = parse_num(v, 0, 1e6, &d) && d == floor(d), o.ring_spin_us = (long)d;
        else if (a == "--local-states")
            ok = parse_num(v, 0, 65536, &d) && d == floor(d), o.local_states = (size_t)d, o.local_set = true;
        else if (a == "--local-probes")
            ok = parse_num(v, 0, 16, &d) && d == floor(d), o.local_probes = (unsigned)d, o.local_set = true;
        else if (a == "--prm-k") ok = parse_num(v, 1, 1000, &d) && d == floor(d), o.prm_k = (size_t)d;
        else {
            fprintf(stderr, "ompl_plan: unknown flag %s\n", a.c_str());
            usage();
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "ompl_plan: bad value for %s: '%s'\n", a.c_str(), v);
            usage();
            return 2;
        }
    }
    if (!o.urdf || paths.empty()) {
        usage();
        return 2;
    }
    if (o.fcl && o.local_set && (o.local_states || o.local_probes)) {
        fprintf(stderr, "ompl_plan: --local-states and --local-probes are for --checker tandem (FCL answers "
                        "every state in process)\n");
        return 2;
    }
    if (o.fcl) o.local_states = 0, o.local_probes = 0;
    if (!o.server) o.server = getenv("TANDEM_SERVER") && *getenv("TANDEM_SERVER") ? getenv("TANDEM_SERVER")
                                                                                    : "127.0.0.1:7450";
    ompl::msg::setLogLevel(ompl::msg::LOG_ERROR);
    ompl::RNG::setSeed(o.seed);

    std::vector<problem_file> probs;
    std::string err;
    if (problems_list(paths, o.per_scenario, &probs, &err) < 0) {
        fprintf(stderr, "ompl_plan: %s\n", err.c_str());
        return 1;
    }
    char e[768];
    if (tdm_robot_load(o.urdf, o.srdf, &sh.robot, e, sizeof e)) {
        fprintf(stderr, "ompl_plan: robot: %s\n", e);
        return 1;
    }
    std::unique_ptr<tdm_robot, void (*)(tdm_robot *)> robot_guard(sh.robot, tdm_robot_free);
    for (uint32_t i = 0; i < sh.robot->n_active; i++) {
        sh.lo.push_back(sh.robot->joints[sh.robot->active[i]].lower);
        sh.hi.push_back(sh.robot->joints[sh.robot->active[i]].upper);
    }
    /* FCL's robot geometry, once: the meshes as a robot scene of the first problem loads them */
    {
        tdm_planning_scene *ps = NULL;
        tdm_robot_scene *rs = NULL;
        tdm_fcl_meshes fm;
        if (tdm_planning_scene_read(probs[0].scene.c_str(), &ps, e, sizeof e) ||
            tdm_robot_scene_create(sh.robot, ps, tdm_fcl_load_mesh, &fm, TDM_PRIMITIVE_TOLERANCE, &rs, e, sizeof e) ||
            tdm_fcl_robot_geoms(sh.robot, fm.meshes, &sh.robot_geoms, e, sizeof e)) {
            fprintf(stderr, "ompl_plan: %s: %s\n", probs[0].scene.c_str(), e);
            tdm_robot_scene_destroy(rs);
            tdm_planning_scene_free(ps);
            return 1;
        }
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
    }
    /* Tandem: the robot stored once; each planner has its own connection */
    std::vector<tdm_client *> conns;
    auto free_conns = [&]() {
        for (tdm_client *c : conns) tdm_client_free(c);
    };
    if (!o.fcl) {
        for (long p = 0; p < o.planners; p++) {
            /* each planner's connection named in its Hello: tandemd's request trace names it */
            std::string name = "ompl_plan-" + std::to_string(p);
            tdm_connect_opts co = {};
            co.addr = o.server;
            co.timeout_ms = 10000;
            co.client_name = name.c_str();
            tdm_client *c = tdm_client_connect_with(&co);
            sh.conn_names[c] = name;
            tdm_client_set_ephemeral_scenes(c, o.ephemeral); /* a problem's scene lives as long as it is planned */
            conns.push_back(c);
            if (!c || tdm_client_err(c)) {
                fprintf(stderr, "ompl_plan: cannot connect to %s: %s\n", o.server,
                        c ? tdm_client_errstr(c) : "out of memory");
                free_conns();
                return 1;
            }
            bool want = o.ring >= 0 || (o.ring == -2 && !strncmp(o.server, "unix:", 5));
            int rc = want ? tdm_client_ring(c, o.ring > 0 ? (uint32_t)o.ring : 0, (int)o.ring_spin_us) : 0;
            if (rc == TDM_CLIENT_ESERVER && o.ring == -2) { /* auto: a server without rings is served over the socket */
                if (p == 0) fprintf(stderr, "ompl_plan: %s: over the socket: %s\n", o.server, tdm_client_errstr(c));
            } else if (rc) {
                fprintf(stderr, "ompl_plan: %s: no shared-memory rings: %s\n", o.server, tdm_client_errstr(c));
                free_conns();
                return 1;
            }
        }
        if (tdm_robot_put_files(conns[0], NULL, o.urdf, o.srdf, sh.robot_id, NULL, NULL)) {
            fprintf(stderr, "ompl_plan: robot: %s\n", tdm_client_errstr(conns[0]));
            free_conns();
            return 1;
        }
        if (o.local_states || o.local_probes) { /* libtandem's copy of the robot just stored */
            std::unique_ptr<tdm_local, void (*)(tdm_local *)> l(tdm_local_create(), tdm_local_free);
            uint8_t id[TDM_ID_BYTES];
            if (!l || tdm_local_robot_load(l.get(), o.urdf, o.srdf, &sh.local_robot)) {
                fprintf(stderr, "ompl_plan: robot (local states): %s\n", l ? tdm_local_errstr(l.get()) : "out of memory");
                free_conns();
                return 1;
            }
            tdm_local_robot_id(sh.local_robot, id);
            if (memcmp(id, sh.robot_id, TDM_ID_BYTES)) { /* a file changed between the two reads */
                fprintf(stderr, "ompl_plan: robot (local states): the local copy is not the stored robot\n");
                free_conns();
                return 1;
            }
        }
    }

    /* Phase 1: plan, P planners at once, each taking the next problem */
    std::vector<outcome> res(probs.size());
    std::atomic<size_t> next(0);
    std::atomic<bool> local_failed(false);
    double t0 = now();
    auto planner = [&](long p) {
        /* --local-states/probes: this planner's own local engine, on its own thread */
        std::unique_ptr<tdm_local, void (*)(tdm_local *)> local(NULL, tdm_local_free);
        if (sh.local_robot) {
            local.reset(tdm_local_create());
            if (!local) {
                fprintf(stderr, "ompl_plan: planner %ld: no local engine: out of memory\n", p);
                local_failed = true;
                return;
            }
        }
        for (;;) {
            size_t i = next.fetch_add(1);
            if (i >= probs.size()) break;
            double t_busy = now();
            run_problem(sh, o.fcl ? NULL : conns[p], local.get(), probs[i], o.seed + i, &res[i]);
            res[i].busy_s = now() - t_busy;
        }
    };
    {
        std::vector<std::thread> ts;
        for (long p = 0; p < o.planners; p++) ts.emplace_back(planner, p);
        for (auto &t : ts) t.join();
    }
    double wall = now() - t0;
    free_conns();

    /* Phase 2: every path re-checked by FCL (not timed) */
    next = 0;
    {
        std::vector<std::thread> ts;
        long nt = std::max(1L, std::min(o.planners, (long)std::max(1u, std::thread::hardware_concurrency())));
        for (long p = 0; p < nt; p++)
            ts.emplace_back([&]() {
                for (;;) {
                    size_t i = next.fetch_add(1);
                    if (i >= probs.size()) break;
                    recheck(sh, probs[i], &res[i]);
                }
            });
        for (auto &t : ts) t.join();
    }

    size_t solved = 0, failed_recheck = 0, errors = local_failed ? 1 : 0; /* a planner without its engine */
    uint64_t checks = 0, requests = 0;
    double setup_s = 0, solve_s = 0, check_s = 0, state_s = 0, busy_s = 0;
    uint64_t state_calls = 0;
    std::vector<double> secs, builds, b_states, b_nn, b_motions; /* roadmaps: medians of the first round and its parts */
    for (size_t i = 0; i < probs.size(); i++) {
        const outcome &r = res[i];
        if (!r.error.empty())
            fprintf(stderr, "ompl_plan: %s/%s: %s\n", probs[i].scenario.c_str(), probs[i].name.c_str(), r.error.c_str());
        if (!r.ran && !r.recheck_failed) errors++;
        solved += r.solved;
        failed_recheck += r.recheck_failed;
        checks += r.checks;
        requests += r.requests;
        setup_s += r.setup_s;
        busy_s += r.busy_s;
        solve_s += r.seconds;
        check_s += r.check_s;
        state_s += r.state_s;
        state_calls += r.state_calls;
        secs.push_back(r.seconds);
        if (o.prm && r.build_s > 0) {
            builds.push_back(r.build_s);
            b_states.push_back(r.states_s);
            b_nn.push_back(r.neighbours_s);
            b_motions.push_back(r.motions_s);
        }
        printf("%s %s %d %.6f %zu %llu\n", probs[i].scenario.c_str(), probs[i].name.c_str(), r.solved ? 1 : 0,
               r.seconds, r.solved ? r.path_states : (size_t)0, (unsigned long long)r.checks);
        if (o.path_out && r.solved && write_path(o.path_out, probs[i], r) < 0) {
            fprintf(stderr, "ompl_plan: cannot write a path into %s\n", o.path_out);
            errors++;
        }
    }
    printf("problems=%zu solved=%zu recheck_failed=%zu errors=%zu median_s=%.6f p95_s=%.6f wall_s=%.3f "
           "problems_per_s=%.2f checks=%llu requests=%llu",
           probs.size(), solved, failed_recheck, errors, quantile(secs, 0.5), quantile(secs, 0.95), wall,
           wall > 0 ? (double)probs.size() / wall : 0.0, (unsigned long long)checks, (unsigned long long)requests);
    if (o.prm)
        printf(" roadmap_median_s=%.6f roadmap_states_s=%.6f roadmap_neighbours_s=%.6f roadmap_motions_s=%.6f",
               quantile(builds, 0.5), quantile(b_states, 0.5), quantile(b_nn, 0.5), quantile(b_motions, 0.5));
    if (!o.fcl) printf(" setup_s=%.3f", setup_s);
    printf(" solve_s=%.3f", solve_s);
    /* the planners' share of the run's wall time spent on problems (the rest: waiting for the last
       problems, once none is left to take, and the threads' start) */
    printf(" busy_s=%.3f busy_share=%.3f", busy_s, wall > 0 ? busy_s / (wall * (double)o.planners) : 0.0);
    if (!o.prm) printf(" check_s=%.3f state_calls=%llu state_s=%.3f", check_s, (unsigned long long)state_calls, state_s);
    printf(" planner=%s checker=%s planners=%ld", o.prm ? "prm" : o.fused ? "rrtconnect-fused" : "rrtconnect",
           o.fcl ? "fcl" : "tandem", o.planners);
    if (sh.local_robot) printf(" local_states=%zu local_probes=%u", o.local_states, o.local_probes);
    printf("\n");
    return errors ? 1 : 0;
}
