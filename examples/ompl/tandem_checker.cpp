/* A plan_checker answered by tandemd (tandem_checker.h). */
#include "tandem_checker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <mutex>

extern "C" {
#include "robot/motion_rounds.h"
#include "robot/motions.h"
}

tandem_checker::tandem_checker(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], size_t n_joints, bool any_state)
    : c_(c), any_state_(any_state)
{
    memcpy(scene_, scene_id, TDM_ID_BYTES);
    this->n_joints = n_joints;
    const tdm_limits *l = &tdm_client_server_info(c)->limits;
    max_queries_ = l->max_queries ? l->max_queries : 65536;
    max_states_ = l->max_motion_states ? l->max_motion_states : UINT64_MAX;
}

static uint64_t mono_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *trace_path()
{
    static const char *p = getenv("TDM_OMPL_TRACE");
    return p && *p ? p : NULL;
}

void tandem_checker::traced(char kind, uint64_t t_send)
{
    if (trace_path()) trace_.push_back(rec{kind, t_send, mono_ns()});
}

tandem_checker::~tandem_checker()
{
    if (trace_.empty()) return;
    static std::mutex mu; /* the planners' checkers append whole problems, one at a time */
    std::lock_guard<std::mutex> lock(mu);
    FILE *f = fopen(trace_path(), "a");
    if (!f) return;
    for (const rec &r : trace_)
        fprintf(f, "%s %c %llu %llu\n", name_.empty() ? "-" : name_.c_str(), r.kind, (unsigned long long)r.t_send,
                (unsigned long long)r.t_answer);
    fclose(f);
}

int tandem_checker::states(const double *q, size_t n, uint8_t *valid)
{
    checks += n;
    if (n && n <= local_max_) {
        if (local_run(q, n) < 0) return -1;
        for (size_t i = 0; i < n; i++) valid[i] = local_res_[i].colliding ? 0 : 1;
        local_batches++;
        return 0;
    }
    for (size_t lo = 0; lo < n;) {
        size_t m = std::min(n - lo, max_queries_);
        results_.resize(m);
        requests++;
        uint64_t t = trace_path() ? mono_ns() : 0;
        if (tdm_query_configs(c_, scene_, TDM_QUERY_BOOL, q + lo * n_joints, (uint32_t)n_joints, m, 0,
                              results_.data(), NULL))
            return fail(std::string("tandemd query: ") + tdm_client_errstr(c_));
        traced('S', t);
        for (size_t i = 0; i < m; i++) valid[lo + i] = results_[i].colliding ? 0 : 1;
        lo += m;
    }
    return 0;
}

int tandem_checker::answer_states_locally(tdm_local *engine, const tdm_local_scene *scene, size_t max_n,
                                          unsigned probes)
{
    local_ = NULL, local_scene_ = NULL, local_max_ = 0, local_probes_ = 0;
    if (!engine || !scene) return 0;
    uint8_t stored[TDM_ID_BYTES], ephemeral[TDM_ID_BYTES];
    tdm_local_scene_id(scene, 0, stored);
    tdm_local_scene_id(scene, 1, ephemeral);
    if (memcmp(stored, scene_, TDM_ID_BYTES) && memcmp(ephemeral, scene_, TDM_ID_BYTES)) {
        char want[TDM_ID_HEX], have[TDM_ID_HEX];
        return fail(std::string("local states: the local scene (") + tdm_id_to_hex(stored, have) +
                    ") is not the stored one (" + tdm_id_to_hex(scene_, want) + ")");
    }
    local_ = engine;
    local_scene_ = scene;
    local_max_ = max_n;
    local_probes_ = std::min(probes, 16u);
    return 0;
}

/* n configurations on the local engine, answers in local_res_ */
int tandem_checker::local_run(const double *q, size_t n)
{
    local_res_.resize(n);
    if (tdm_local_query_configs(local_, local_scene_, TDM_QUERY_BOOL, q, (uint32_t)n_joints, n, 0, local_res_.data()))
        return fail(std::string("Tandem's local engine: ") + tdm_local_errstr(local_));
    return 0;
}

int tandem_checker::motions(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                            double *last_free)
{
    if (!local_probes_ || need_first || last_free || !any_state_)
        return motions_remote(ab, n, resolution, need_first, first, last_free);
    /* the probes of every motion in one local run; those a probe answers are done */
    const size_t j = n_joints;
    std::vector<uint64_t> &ns = probe_n_;
    ns.resize(n);
    probe_q_.clear();
    for (size_t i = 0; i < n; i++) {
        const double *a = ab + i * 2 * j, *b = a + j;
        ns[i] = tdm__motion_states(a, b, j, resolution);
        uint64_t p = std::min<uint64_t>(local_probes_, ns[i]); /* 0 states: tandemd says why */
        for (uint64_t x = 0; x < p; x++) {
            probe_q_.resize(probe_q_.size() + j);
            tdm__motion_state(a, b, j, tdm_motion_rounds_order(ns[i], local_probes_, x), ns[i],
                              &probe_q_[probe_q_.size() - j]);
        }
    }
    if (!probe_q_.empty() && local_run(probe_q_.data(), probe_q_.size() / j) < 0) return -1;
    rest_.clear();
    rest_ab_.clear();
    for (size_t i = 0, r = 0; i < n; i++) {
        uint64_t p = std::min<uint64_t>(local_probes_, ns[i]);
        first[i] = -1;
        for (uint64_t x = 0; x < p && first[i] < 0; x++)
            if (local_res_[r + x].colliding) first[i] = (int64_t)tdm_motion_rounds_order(ns[i], local_probes_, x);
        r += p;
        if (first[i] >= 0) {
            checks += ns[i];
            local_motions++;
        } else {
            rest_.push_back(i);
            rest_ab_.insert(rest_ab_.end(), ab + i * 2 * j, ab + (i + 1) * 2 * j);
        }
    }
    if (rest_.empty()) return 0;
    rest_first_.resize(rest_.size());
    if (motions_remote(rest_ab_.data(), rest_.size(), resolution, false, rest_first_.data(), NULL) < 0) return -1;
    for (size_t x = 0; x < rest_.size(); x++) first[rest_[x]] = rest_first_[x];
    return 0;
}

int tandem_checker::motions_remote(const double *ab, size_t n, double resolution, bool need_first, int64_t *first,
                                   double *last_free)
{
    const size_t j = n_joints;
    /* a validity check only (checkMotion(s1, s2), a roadmap's edges): any colliding state will do,
       which the server finds after checking a few states coarse to fine for most colliding motions */
    unsigned flags = !need_first && !last_free && any_state_ ? TDM_MOTION_ANY_STATE : 0;
    std::vector<uint64_t> n_states(n);
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo;
        uint64_t states = 0;
        while (hi < n && hi - lo < max_queries_) {
            uint64_t s = tdm__motion_states(ab + hi * 2 * j, ab + hi * 2 * j + j, j, resolution);
            if (hi > lo && states + s > max_states_) break;
            states += s;
            hi++;
        }
        requests++;
        uint64_t t = trace_path() ? mono_ns() : 0;
        if (tdm_motion_check_flags(c_, scene_, resolution, ab + lo * 2 * j, (uint32_t)j, NULL, hi - lo, flags,
                                   first + lo, n_states.data() + lo, last_free ? last_free + lo * j : NULL))
            return fail(std::string("tandemd motion check: ") + tdm_client_errstr(c_));
        traced('M', t);
        lo = hi;
    }
    for (size_t i = 0; i < n; i++) checks += n_states[i];
    return 0;
}
