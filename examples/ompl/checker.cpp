/* OMPL's faces of a plan_checker (checker.h). */
#include "checker.h"

#include <chrono>
#include <vector>

#include <ompl/base/spaces/RealVectorStateSpace.h>

extern "C" {
#include "robot/motions.h"
}

namespace ob = ompl::base;

static void values_of(const ob::State *s, size_t j, double *out)
{
    const double *v = s->as<ob::RealVectorStateSpace::StateType>()->values;
    for (size_t i = 0; i < j; i++) out[i] = v[i];
}

/* Adds the scope's time to a checker's check_s. */
namespace {
struct timed {
    explicit timed(plan_checker *c, bool state = false) : c_(c), state_(state), t0_(std::chrono::steady_clock::now()) {}
    ~timed()
    {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        c_->check_s += s;
        if (state_) {
            c_->state_s += s;
            c_->state_calls++;
        }
    }
    plan_checker *c_;
    bool state_;
    std::chrono::steady_clock::time_point t0_;
};
} // namespace

bool checker_validity::isValid(const ob::State *s) const
{
    timed t(c_, true);
    std::vector<double> q(c_->n_joints);
    values_of(s, q.size(), q.data());
    uint8_t ok = 0;
    if (c_->states(q.data(), 1, &ok) < 0) return false;
    return ok != 0;
}

bool checker_motion::checkMotion(const ob::State *s1, const ob::State *s2) const
{
    timed t(c_);
    const size_t j = c_->n_joints;
    std::vector<double> ab(2 * j);
    values_of(s1, j, ab.data());
    values_of(s2, j, ab.data() + j);
    int64_t k = 0;
    bool ok = c_->motions(ab.data(), 1, resolution_, false, &k, NULL) == 0 && k < 0;
    if (ok) valid_++;
    else invalid_++;
    return ok;
}

bool checker_motion::checkMotion(const ob::State *s1, const ob::State *s2,
                                 std::pair<ob::State *, double> &lastValid) const
{
    timed t(c_);
    const size_t j = c_->n_joints;
    std::vector<double> ab(2 * j), last(j);
    values_of(s1, j, ab.data());
    values_of(s2, j, ab.data() + j);
    int64_t k = 0;
    if (c_->motions(ab.data(), 1, resolution_, true, &k, last.data()) < 0) {
        if (lastValid.first) si_->copyState(lastValid.first, s1);
        lastValid.second = 0;
        invalid_++;
        return false;
    }
    if (k < 0) {
        valid_++;
        return true;
    }
    uint64_t n = tdm__motion_states(ab.data(), ab.data() + j, j, resolution_);
    if (k == 0) {
        if (lastValid.first) si_->copyState(lastValid.first, s1);
        lastValid.second = 0;
    } else {
        if (lastValid.first) {
            double *v = lastValid.first->as<ob::RealVectorStateSpace::StateType>()->values;
            for (size_t i = 0; i < j; i++) v[i] = last[i];
        }
        lastValid.second = n > 1 ? (double)(k - 1) / (double)(n - 1) : 0;
    }
    invalid_++;
    return false;
}
