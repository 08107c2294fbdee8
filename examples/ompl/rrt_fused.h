/* RRTConnect (Kuffner and LaValle, 2000) whose goal-tree extension asks one motion check
 * instead of a state check and a motion check.
 *
 * OMPL's RRTConnect extends its goal tree from the nearest node n toward a sample by a new
 * state x as isValid(x) && checkMotion(x, n): its motion validators assume a motion's first
 * state valid, so the state is asked first. Both checkers of ompl_plan check every state of a
 * motion, its first included (checker.h: states k = 0 .. n - 1; the FCL checker's bisection
 * order ends with the start), so here the extension is checkMotion(x, n) alone: the same
 * answer, one round trip to tandemd instead of two (a state check was ~40 % of RRTConnect's
 * requests). Everything else is RRTConnect as OMPL runs it: its range (a fifth of the space's
 * extent unless set), its nearest-neighbour structure, the start and goal states checked
 * through the planner's input states, the goal tree growing from sampled goals, the trees
 * taking turns to grow toward a uniform sample, the other one then connecting toward the new
 * node until it is reached or trapped; the path runs from the start tree's root to the goal
 * tree's.
 *
 * It is a planner of its own, not a patch of OMPL's (whose extension is not virtual):
 * `ompl_plan --planner rrtconnect-fused`, with either checker. */
#ifndef TDM_OMPL_RRT_FUSED_H
#define TDM_OMPL_RRT_FUSED_H

#include <memory>

#include <ompl/base/Planner.h>
#include <ompl/base/StateSampler.h>
#include <ompl/datastructures/NearestNeighbors.h>

class rrt_fused : public ompl::base::Planner {
public:
    explicit rrt_fused(const ompl::base::SpaceInformationPtr &si);
    ~rrt_fused() override;
    ompl::base::PlannerStatus solve(const ompl::base::PlannerTerminationCondition &ptc) override;
    void clear() override;
    void setup() override;
    void setRange(double r) { range_ = r; }
    double getRange() const { return range_; }

private:
    struct motion {
        ompl::base::State *state = nullptr;
        motion *parent = nullptr;
    };
    using tree = std::shared_ptr<ompl::NearestNeighbors<motion *>>;
    enum grow { TRAPPED, ADVANCED, REACHED };
    /* Extends t (the start tree when from_start) from its node nearest target by at most the
     * range; *added: the new node. */
    grow extend(tree &t, bool from_start, motion *target, motion **added);
    motion *add(tree &t, const ompl::base::State *s, motion *parent);
    void free_tree(tree &t);

    ompl::base::StateSamplerPtr sampler_;
    tree start_, goal_;
    ompl::base::State *step_ = nullptr; /* scratch: the interpolated state */
    double range_ = 0;
};

#endif
