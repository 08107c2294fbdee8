/* A plan_checker answered by FCL in process (fcl_checker.h). */
#include "fcl_checker.h"

#include <atomic>
#include <thread>

extern "C" {
#include "robot/motions.h"
}

struct fcl_plan_checker::worker {
    tdm_fcl_checker fc;
    const tdm_robot_scene *rs;
    std::vector<tdm_xform> links, poses;
    std::vector<double> q;
    worker(const tdm_robot_scene *r, const tdm_fcl_model &m)
        : fc(m), rs(r), links(r->robot->n_links), poses(r->n_movable), q(r->robot->n_active) {}
    /* 1 colliding, 0 free, -1 bad configuration */
    int collides(const double *cfg)
    {
        if (tdm_robot_scene_poses(rs, cfg, rs->robot->n_active, links.data(), poses.data())) return -1;
        return fc.check(poses.data()) ? 1 : 0;
    }
    /* first colliding k of the motion a -> b of n states, in the order asked */
    int64_t motion(const double *a, const double *b, size_t j, uint64_t n, bool need_first)
    {
        if (need_first) {
            for (uint64_t k = 0; k < n; k++) {
                tdm__motion_state(a, b, j, k, n, q.data());
                if (collides(q.data()) != 0) return (int64_t)k;
            }
            return -1;
        }
        /* the end, then the interior by bisection (as DiscreteMotionValidator), then the start */
        if (collides(b) != 0) return (int64_t)(n - 1);
        if (n > 2) {
            std::vector<std::pair<uint64_t, uint64_t>> q2{{1, n - 2}};
            for (size_t h = 0; h < q2.size(); h++) {
                uint64_t lo = q2[h].first, hi = q2[h].second;
                uint64_t mid = lo + (hi - lo) / 2;
                tdm__motion_state(a, b, j, mid, n, q.data());
                if (collides(q.data()) != 0) return (int64_t)mid;
                if (mid > lo) q2.push_back({lo, mid - 1});
                if (mid < hi) q2.push_back({mid + 1, hi});
            }
        }
        if (collides(a) != 0) return 0;
        return -1;
    }
};

fcl_plan_checker::fcl_plan_checker(const tdm_robot_scene *rs, const tdm_fcl_model *model, int threads)
    : rs_(rs), model_(model)
{
    n_joints = rs->robot->n_active;
    for (int t = 0; t < (threads < 1 ? 1 : threads); t++) workers_.emplace_back(new worker(rs, *model));
}

fcl_plan_checker::~fcl_plan_checker() = default;

template <class F> void fcl_plan_checker::parallel(size_t n, F fn)
{
    size_t nt = workers_.size();
    if (n < 32 || nt == 1) {
        for (size_t i = 0; i < n; i++) fn(*workers_[0], i);
        return;
    }
    if (nt > n / 16) nt = n / 16;
    std::atomic<size_t> next(0);
    auto run = [&](worker &w) {
        for (;;) {
            size_t lo = next.fetch_add(16);
            if (lo >= n) break;
            for (size_t i = lo; i < n && i < lo + 16; i++) fn(w, i);
        }
    };
    std::vector<std::thread> ts;
    for (size_t t = 1; t < nt; t++) ts.emplace_back(run, std::ref(*workers_[t]));
    run(*workers_[0]);
    for (auto &t : ts) t.join();
}

int fcl_plan_checker::collides(const double *q)
{
    return workers_[0]->collides(q);
}

int fcl_plan_checker::states(const double *q, size_t n, uint8_t *valid)
{
    const size_t j = n_joints;
    std::atomic<bool> bad(false);
    parallel(n, [&](worker &w, size_t i) {
        int c = w.collides(q + i * j);
        if (c < 0) bad = true;
        valid[i] = c == 0;
    });
    checks += n;
    requests++;
    return bad ? fail("a configuration FCL could not place (wrong joint count or non-finite)") : 0;
}

int fcl_plan_checker::motions(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                              double *last_free)
{
    const size_t j = n_joints;
    std::vector<uint64_t> ns(n);
    for (size_t i = 0; i < n; i++) {
        ns[i] = tdm__motion_states(ab + i * 2 * j, ab + i * 2 * j + j, j, resolution);
        if (!ns[i]) return fail("a motion of more states than robot/motions.h allows");
        checks += ns[i];
    }
    parallel(n, [&](worker &w, size_t i) {
        const double *a = ab + i * 2 * j, *b = a + j;
        first[i] = w.motion(a, b, j, ns[i], need_first || last_free);
        if (last_free) {
            if (first[i] < 0) for (size_t x = 0; x < j; x++) last_free[i * j + x] = b[x];
            else if (first[i] > 0) tdm__motion_state(a, b, j, (uint64_t)first[i] - 1, ns[i], last_free + i * j);
        }
    });
    requests++;
    return 0;
}
