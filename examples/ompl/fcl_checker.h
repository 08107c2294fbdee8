/* A plan_checker answered by FCL in process (bench/fcl_robot.h: the same model as
 * bench_robot, FCL's own geometry). A configuration's forward kinematics are
 * robot/'s (tdm_robot_scene_poses), its pairs the robot scene's checked pairs.
 *
 * Batches of 32 or more run on `threads` threads (one FCL checker each, handing
 * out items through one atomic counter); smaller ones on the caller's thread.
 * Motions: with need_first, states first to last, stopping at the first
 * colliding one (the answer Tandem gives); without, OMPL's DiscreteMotionValidator
 * order (the end state, then the interior by bisection, then the start), stopping
 * at any colliding state: FCL's best order for a yes/no motion. */
#ifndef TDM_OMPL_FCL_CHECKER_H
#define TDM_OMPL_FCL_CHECKER_H

#include <memory>
#include <vector>

#include "bench/fcl_robot.h"
#include "checker.h"

class fcl_plan_checker : public plan_checker {
public:
    /* rs and model borrowed (must outlive the checker); threads >= 1. */
    fcl_plan_checker(const tdm_robot_scene *rs, const tdm_fcl_model *model, int threads);
    ~fcl_plan_checker() override;
    int states(const double *q, size_t n, uint8_t *valid) override;
    int motions(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                double *last_free) override;
    /* One configuration, on the caller's thread: 1 colliding, 0 free, -1 bad input. */
    int collides(const double *q);

    struct worker;

private:
    template <class F> void parallel(size_t n, F fn);
    const tdm_robot_scene *rs_;
    const tdm_fcl_model *model_;
    std::vector<std::unique_ptr<worker>> workers_;
};

#endif
