/* MotionBenchMaker problems on disk, and a problem's start and goal.
 *
 * Layout (MBM's): a problem is requestNNNN.yaml (moveit_msgs/MotionPlanRequest)
 * beside sceneNNNN.yaml (moveit_msgs/PlanningScene) in a folder named after its
 * scenario (e.g. problems/bookshelf_small_panda/). A path given to ompl_plan is a
 * request file, a scenario folder (its request*.yaml, sorted), or a folder of
 * scenario folders (each, sorted). Both files are read with robot/planning_scene.h.
 *
 * Start and goal, per active joint of the robot (configuration order): the start
 * is the request's start_state value, else the scene's robot_state value, else 0;
 * the goal is the value of the request's first goal's joint constraint, else the
 * start's. A goal naming a joint that is not an active joint of the robot, or a
 * start or goal outside the joint's limits by more than 1e-9, is an error naming
 * the request file and the joint. */
#ifndef TDM_OMPL_PROBLEMS_H
#define TDM_OMPL_PROBLEMS_H

#include <string>
#include <vector>

extern "C" {
#include "robot/urdf.h"
}
#include "robot/planning_scene.h"

struct problem_file {
    std::string scenario; /* the folder's name */
    std::string name;     /* NNNN */
    std::string request, scene;
};

/* Appends the problems under each path (at most per_scenario of each scenario
 * folder, 0: all). Returns 0, or -1 with *err naming the path. */
int problems_list(const std::vector<std::string> &paths, size_t per_scenario, std::vector<problem_file> *out,
                  std::string *err);

/* The start and goal configurations of request req in scene ps, for robot r. */
int problem_endpoints(const tdm_robot *r, const tdm_planning_scene *ps, const tdm_motion_request *req,
                      const char *request_path, std::vector<double> *start, std::vector<double> *goal,
                      std::string *err);

#endif
