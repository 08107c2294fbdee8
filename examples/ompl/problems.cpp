/* MotionBenchMaker problems on disk (problems.h). */
#include "problems.h"

#include <string.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

static bool is_request(const fs::path &p)
{
    std::string n = p.filename().string();
    return n.size() > 12 && n.compare(0, 7, "request") == 0 && n.compare(n.size() - 5, 5, ".yaml") == 0;
}

static problem_file problem_of(const fs::path &req)
{
    problem_file pf;
    std::string n = req.filename().string();
    pf.name = n.substr(7, n.size() - 12);
    pf.request = req.string();
    pf.scene = (req.parent_path() / ("scene" + pf.name + ".yaml")).string();
    pf.scenario = fs::absolute(req).parent_path().filename().string();
    return pf;
}

static std::vector<fs::path> requests_in(const fs::path &dir)
{
    std::vector<fs::path> r;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && is_request(e.path())) r.push_back(e.path());
    std::sort(r.begin(), r.end());
    return r;
}

int problems_list(const std::vector<std::string> &paths, size_t per_scenario, std::vector<problem_file> *out,
                  std::string *err)
{
    for (const std::string &p : paths) {
        std::error_code ec;
        fs::path path(p);
        if (fs::is_regular_file(path, ec)) {
            if (!is_request(path)) {
                *err = p + ": not a requestNNNN.yaml file";
                return -1;
            }
            out->push_back(problem_of(path));
            continue;
        }
        if (!fs::is_directory(path, ec)) {
            *err = p + ": no such file or folder";
            return -1;
        }
        std::vector<fs::path> dirs;
        if (!requests_in(path).empty()) dirs.push_back(path);
        else {
            for (const auto &e : fs::directory_iterator(path, ec))
                if (e.is_directory() && !requests_in(e.path()).empty()) dirs.push_back(e.path());
            std::sort(dirs.begin(), dirs.end());
        }
        if (dirs.empty()) {
            *err = p + ": no request*.yaml in it or in its folders";
            return -1;
        }
        for (const fs::path &d : dirs) {
            std::vector<fs::path> reqs = requests_in(d);
            if (per_scenario && reqs.size() > per_scenario) reqs.resize(per_scenario);
            for (const fs::path &r : reqs) out->push_back(problem_of(r));
        }
    }
    return 0;
}

int problem_endpoints(const tdm_robot *r, const tdm_planning_scene *ps, const tdm_motion_request *req,
                      const char *request_path, std::vector<double> *start, std::vector<double> *goal,
                      std::string *err)
{
    const size_t j = r->n_active;
    start->assign(j, 0.0);
    goal->assign(j, 0.0);
    for (size_t i = 0; i < j; i++) {
        const char *name = r->joints[r->active[i]].name;
        double v = 0;
        if (!tdm_ps_robot_state_position(&req->start, name, &v)) tdm_ps_robot_state_position(&ps->robot_state, name, &v);
        (*start)[i] = v;
        (*goal)[i] = v;
    }
    for (uint32_t g = 0; g < req->n_goal; g++) {
        size_t i = 0;
        while (i < j && strcmp(r->joints[r->active[i]].name, req->goal_names[g])) i++;
        if (i == j) {
            *err = std::string(request_path) + ": goal_constraints[0]: joint '" + req->goal_names[g] +
                   "' is not an active joint of the robot";
            return -1;
        }
        (*goal)[i] = req->goal_positions[g];
    }
    for (size_t i = 0; i < j; i++) {
        const tdm_robot_joint &jt = r->joints[r->active[i]];
        for (int w = 0; w < 2; w++) {
            double v = w ? (*goal)[i] : (*start)[i];
            if (v < jt.lower - 1e-9 || v > jt.upper + 1e-9) {
                *err = std::string(request_path) + ": " + (w ? "goal" : "start") + " of joint '" + jt.name + "' (" +
                       std::to_string(v) + ") is outside its limits [" + std::to_string(jt.lower) + ", " +
                       std::to_string(jt.upper) + "]";
                return -1;
            }
        }
        (*start)[i] = std::min(std::max((*start)[i], jt.lower), jt.upper);
        (*goal)[i] = std::min(std::max((*goal)[i], jt.lower), jt.upper);
    }
    return 0;
}
