/* A plan_checker answered by tandemd through libtandem (client/tandem.h): the
 * robot and its planning scene are stored in the server (RobotPut, RobotScenePut)
 * and every batch is one request on this checker's own connection: states as one
 * joint-space Query (tdm_query_configs, bool mode), motions as one MotionCheck
 * (tdm_motion_check), split only where the server's limits (max_queries,
 * max_motion_states) say so. With need_first (or last_free) the server checks a
 * motion's states first to last and answers the first colliding k; without, and with
 * any_state, it answers any colliding k (MotionCheck's any_state: a few states coarse
 * to fine first, tandemd's --motion-probes).
 *
 * Local states (answer_states_locally): batches of at most a few states are
 * answered in this process by libtandem's local engine (tdm_local_*), on the
 * planner's own thread, over its copy of the stored robot scene (built from the same
 * files by the same code, and checked to have the stored scene's id, so the same
 * answers), and only motions and larger batches go to tandemd. A planner's lone
 * isValid then costs a CPU engine run instead of a round trip: the hybrid of the
 * workpile design, small queries on the host, large ones pooled on the device.
 *
 * Local probes (the same call's `probes`): a motion asked with any_state first has
 * its first `probes` states of tandemd's any-state order (the end, the middle, the
 * quarters...: robot/motion_rounds.h's tdm_motion_rounds_order, as --motion-probes
 * orders them) checked by the same local engine; a motion one of them collides
 * in is answered with that state, and only the others go to tandemd, which
 * checks them whole. */
#ifndef TDM_OMPL_TANDEM_CHECKER_H
#define TDM_OMPL_TANDEM_CHECKER_H

#include <algorithm>
#include <string>
#include <vector>

#include "checker.h"
#include <tandem/tandem.h>


class tandem_checker : public plan_checker {
public:
    /* c: a connected client (borrowed, this checker's only), scene_id: a stored robot
     * scene whose robot has n_joints active joints. */
    tandem_checker(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], size_t n_joints, bool any_state = true);
    ~tandem_checker() override;
    /* TDM_OMPL_TRACE=FILE: each request's send and answer times (CLOCK_MONOTONIC ns) are
     * appended to FILE, under `name` (its connection's Hello client_name), when the checker
     * goes: what tandemd's TDM_REQUEST_TRACE joins with (bench/request_legs.py). */
    void trace_as(const std::string &name) { name_ = name; }
    /* Batches of at most max_n states answered by engine (borrowed: a local engine only
     * this checker's thread uses) over scene (borrowed: libtandem's copy of the stored
     * scene) instead of tandemd; max_n 0: none. probes (at most 16): any-state motions'
     * first states checked there too (see the top); 0: none. Returns 0, or -1 (error()
     * says why, and nothing is answered locally) when scene's id, stored or ephemeral,
     * is not the stored scene's: a copy of another scene would give its answers. */
    int answer_states_locally(tdm_local *engine, const tdm_local_scene *scene, size_t max_n, unsigned probes = 0);
    uint64_t local_batches = 0;  /* state batches answered in process (not in `requests`) */
    uint64_t local_motions = 0;  /* motions answered by their local probes (not in `requests`) */
    int states(const double *q, size_t n, uint8_t *valid) override;
    int motions(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                double *last_free) override;

private:
    tdm_client *c_;
    uint8_t scene_[TDM_ID_BYTES];
    size_t max_queries_;
    uint64_t max_states_;
    bool any_state_;
    std::string name_;
    struct rec { char kind; uint64_t t_send, t_answer; };
    std::vector<rec> trace_;
    void traced(char kind, uint64_t t_send);
    std::vector<tdm_query_result> results_;
    tdm_local *local_ = nullptr;
    const tdm_local_scene *local_scene_ = nullptr;
    size_t local_max_ = 0;
    unsigned local_probes_ = 0;
    std::vector<tdm_query_result> local_res_;
    std::vector<double> probe_q_, rest_ab_;
    std::vector<uint64_t> probe_n_; /* each motion's state count */
    std::vector<size_t> rest_;
    std::vector<int64_t> rest_first_;
    int local_run(const double *q, size_t n);
    int motions_remote(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                       double *last_free);
};

#endif
