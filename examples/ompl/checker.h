/* The collision checker a planner of ompl_plan asks, and its OMPL faces.
 *
 * A checker answers batches: many configurations at once (states), many motions
 * at once (motions). One configuration is J doubles, the robot's active joints in
 * `tandem robot joints` order. A motion a -> b is cut into states exactly as
 * Tandem's MotionCheck cuts it (robot/motions.h: n = max(2, ceil(max_j |b_j - a_j|
 * / R) + 1), q_k = a + k/(n-1) (b - a)), so that both checkers check the same
 * states; the answer is the first colliding k, or -1 when every state is free.
 *
 * Counting: `checks` adds the configurations a planner asked about: one per state
 * query and n per motion (its state count, whether or not it collides early): the
 * same count for every checker, whatever each one ran.
 *
 * Errors: a checker that cannot answer (a lost connection, a refused request)
 * returns -1 and keeps the first message in error(); its OMPL faces then answer
 * "invalid" and the planner's problem is reported failed with that message.
 *
 * Threads: one checker serves one planner (one thread); its own internal
 * parallelism (FCL's --fcl-threads) is its business. */
#ifndef TDM_OMPL_CHECKER_H
#define TDM_OMPL_CHECKER_H

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>

#include <ompl/base/MotionValidator.h>
#include <ompl/base/SpaceInformation.h>
#include <ompl/base/StateValidityChecker.h>

class plan_checker {
public:
    virtual ~plan_checker() = default;
    /* n configurations q[i * J ..]: valid[i] = 1 when free, 0 when colliding. */
    virtual int states(const double *q, size_t n, uint8_t *valid) = 0;
    /* n motions ab[i * 2J ..] (start, then end) at resolution R: first[i] = -1 or
     * the first colliding k; last_free (may be NULL, else n * J) state k - 1 (the
     * end when free; untouched when k = 0). With need_first false the checker may
     * answer any colliding k (the one it found first in its own order) and
     * last_free must be NULL: what checkMotion(s1, s2) needs. */
    virtual int motions(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                        double *last_free) = 0;
    const std::string &error() const { return error_; }
    uint64_t checks = 0;   /* configurations asked about (see the top) */
    uint64_t requests = 0; /* batches answered (round trips for Tandem) */
    double check_s = 0;    /* time inside the OMPL faces below (the planner waiting for its answers) */
    uint64_t state_calls = 0; /* isValid calls (one configuration each), and their part of check_s */
    double state_s = 0;
    size_t n_joints = 0;

protected:
    int fail(const std::string &what)
    {
        if (error_.empty()) error_ = what;
        return -1;
    }
    std::string error_;
};

/* OMPL's StateValidityChecker over a checker: one configuration per call. */
class checker_validity : public ompl::base::StateValidityChecker {
public:
    checker_validity(const ompl::base::SpaceInformationPtr &si, plan_checker *c)
        : ompl::base::StateValidityChecker(si), c_(c) {}
    bool isValid(const ompl::base::State *s) const override;

private:
    plan_checker *c_; /* borrowed */
};

/* OMPL's MotionValidator over a checker: a motion in one batch (one request to
 * tandemd), at resolution R (radians; the largest joint step between checked
 * states). lastValid gets the last free state and its fraction (k - 1) / (n - 1). */
class checker_motion : public ompl::base::MotionValidator {
public:
    checker_motion(const ompl::base::SpaceInformationPtr &si, plan_checker *c, double resolution)
        : ompl::base::MotionValidator(si), c_(c), resolution_(resolution) {}
    bool checkMotion(const ompl::base::State *s1, const ompl::base::State *s2) const override;
    bool checkMotion(const ompl::base::State *s1, const ompl::base::State *s2,
                     std::pair<ompl::base::State *, double> &lastValid) const override;

private:
    plan_checker *c_; /* borrowed */
    double resolution_;
};

#endif
