/* RRTConnect with one motion check per goal-tree extension (rrt_fused.h). */
#include "rrt_fused.h"

#include <algorithm>
#include <vector>

#include <ompl/base/goals/GoalSampleableRegion.h>
#include <ompl/geometric/PathGeometric.h>
#include <ompl/tools/config/SelfConfig.h>

namespace ob = ompl::base;
namespace og = ompl::geometric;

rrt_fused::rrt_fused(const ob::SpaceInformationPtr &si) : ob::Planner(si, "RRTConnectFused")
{
    specs_.recognizedGoal = ob::GOAL_SAMPLEABLE_REGION;
    specs_.directed = true;
}

rrt_fused::~rrt_fused()
{
    free_tree(start_);
    free_tree(goal_);
    if (step_) si_->freeState(step_);
}

void rrt_fused::setup()
{
    ob::Planner::setup();
    ompl::tools::SelfConfig sc(si_, getName());
    sc.configurePlannerRange(range_); /* unset: a fifth of the space's extent, as RRTConnect */
    auto dist = [this](const motion *a, const motion *b) { return si_->distance(a->state, b->state); };
    if (!start_) start_.reset(ompl::tools::SelfConfig::getDefaultNearestNeighbors<motion *>(this));
    if (!goal_) goal_.reset(ompl::tools::SelfConfig::getDefaultNearestNeighbors<motion *>(this));
    start_->setDistanceFunction(dist);
    goal_->setDistanceFunction(dist);
}

void rrt_fused::free_tree(tree &t)
{
    if (!t) return;
    std::vector<motion *> all;
    t->list(all);
    for (motion *m : all) {
        si_->freeState(m->state);
        delete m;
    }
    t->clear();
}

void rrt_fused::clear()
{
    ob::Planner::clear();
    sampler_.reset();
    free_tree(start_);
    free_tree(goal_);
}

rrt_fused::motion *rrt_fused::add(tree &t, const ob::State *s, motion *parent)
{
    auto *m = new motion;
    m->state = si_->allocState();
    si_->copyState(m->state, s);
    m->parent = parent;
    t->add(m);
    return m;
}

rrt_fused::grow rrt_fused::extend(tree &t, bool from_start, motion *target, motion **added)
{
    motion *near = t->nearest(target);
    const ob::State *to = target->state;
    bool reach = true;
    double d = si_->distance(near->state, to);
    if (d > range_) {
        si_->getStateSpace()->interpolate(near->state, to, range_ / d, step_);
        if (si_->equalStates(near->state, step_)) return TRAPPED; /* no progress: a degenerate step */
        to = step_;
        reach = false;
    }
    /* from the goal tree the motion starts at the new state, which its check covers (the header) */
    bool ok = from_start ? si_->checkMotion(near->state, to) : si_->checkMotion(to, near->state);
    if (!ok) return TRAPPED;
    *added = add(t, to, near);
    return reach ? REACHED : ADVANCED;
}

ob::PlannerStatus rrt_fused::solve(const ob::PlannerTerminationCondition &ptc)
{
    checkValidity();
    auto *goal = dynamic_cast<ob::GoalSampleableRegion *>(pdef_->getGoal().get());
    if (!goal) return ob::PlannerStatus::UNRECOGNIZED_GOAL_TYPE;
    while (const ob::State *s = pis_.nextStart()) add(start_, s, nullptr); /* checked there */
    if (start_->size() == 0) return ob::PlannerStatus::INVALID_START;
    if (!goal->couldSample()) return ob::PlannerStatus::INVALID_GOAL;
    if (!sampler_) sampler_ = si_->allocStateSampler();
    if (!step_) step_ = si_->allocState();
    motion sample;
    sample.state = si_->allocState();
    bool grow_start = true;
    motion *joint_start = nullptr, *joint_goal = nullptr;
    while (!ptc) {
        /* the goal tree's roots: goal states sampled (and checked) as it grows */
        if (goal_->size() == 0 || pis_.getSampledGoalsCount() < goal_->size() / 2) {
            const ob::State *g = goal_->size() == 0 ? pis_.nextGoal(ptc) : pis_.nextGoal();
            if (g) add(goal_, g, nullptr);
            if (goal_->size() == 0) break; /* no valid goal state */
        }
        sampler_->sampleUniform(sample.state);
        tree &t = grow_start ? start_ : goal_, &other = grow_start ? goal_ : start_;
        bool from_start = grow_start;
        grow_start = !grow_start;
        motion *added = nullptr;
        if (extend(t, from_start, &sample, &added) == TRAPPED) continue;
        /* the other tree connects toward the new node */
        motion target, *reached = nullptr;
        target.state = added->state;
        grow g = ADVANCED;
        while (g == ADVANCED && !ptc) g = extend(other, !from_start, &target, &reached);
        if (g == REACHED) {
            joint_start = from_start ? added : reached;
            joint_goal = from_start ? reached : added;
            break;
        }
    }
    si_->freeState(sample.state);
    if (!joint_start) return ptc ? ob::PlannerStatus::TIMEOUT : ob::PlannerStatus::INVALID_GOAL;
    /* the start tree's branch from its root, then the goal tree's to its root; the two joint
       nodes hold the same state: it goes in once */
    std::vector<motion *> head, tail;
    for (motion *m = joint_start; m; m = m->parent) head.push_back(m);
    for (motion *m = joint_goal->parent; m; m = m->parent) tail.push_back(m);
    auto path = std::make_shared<og::PathGeometric>(si_);
    for (auto it = head.rbegin(); it != head.rend(); ++it) path->append((*it)->state);
    for (motion *m : tail) path->append(m->state);
    pdef_->addSolutionPath(path, false, 0.0, getName());
    return ob::PlannerStatus::EXACT_SOLUTION;
}
