/* Motion checks with early exit, as rounds of batches: the one implementation
 * behind `tandem motions` (tools/motions_cmd.c, which runs each batch through
 * tdm_sched_run) and tandemd's MotionCheck (daemon/request_motion.c, which runs
 * each batch as a pooler job, pooled with every other query).
 *
 * A motion a -> b is checked at the states robot/motions.h defines; its answer is
 * the smallest colliding k, or -1 when every state is free.
 *
 * Strategy (first to last). Every motion keeps a cursor, the first state not yet
 * checked. The checks go in rounds over the motions still open; in a round each
 * open motion gives its next w states (w = the batch shared among the open
 * motions, but at most first << round, so that the first rounds stay short
 * when few motions are open; at least first, which is TDM_MOTION_FIRST_WINDOW = 16
 * unless tdm_motion_rounds_set_window says otherwise), in order from its cursor,
 * and the states are cut into batches of at most `batch` states. After a batch, a
 * motion whose states in it collide is answered with the smallest such k and
 * closed: all its states before them were found free in earlier batches, so that
 * k is the smallest colliding one. A motion whose last state was free is answered
 * -1. Later rounds only run motions still open.
 *
 * Any state (tdm_motion_rounds_set_any): when any colliding state will do as a colliding
 * motion's answer (a planner asking only whether a motion is free), the first round checks
 * each motion's first `probes` states of a coarse-to-fine order (the end, then the interior by
 * bisection as OMPL's DiscreteMotionValidator, the start last), and the rounds after it
 * the motion's other states spread (every S-th state first, S a power of two up to 64 that
 * leaves ~8 states or more a pass, then those halfway between, and so on: a thin obstacle the
 * probes missed is met in the first pass), the window of round r being first << r. A motion
 * with a colliding state in a batch is answered with the smallest colliding k of that batch.
 * Most colliding planner motions collide at one of the first few of those states, so they
 * are answered by a small first batch (one a host lane checks alone at once); a free motion
 * still has every state checked.
 *
 * Use: tdm_motion_rounds_next gives a batch's configurations, the caller finds
 * which of them collide (bool mode), tdm_motion_rounds_take hands that back; until
 * next gives 0. One thread at a time; no I/O. */
#ifndef TDM_ROBOT_MOTION_ROUNDS_H
#define TDM_ROBOT_MOTION_ROUNDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tdm_motion_rounds tdm_motion_rounds;

#define TDM_MOTION_FIRST_WINDOW 16 /* the first round's window, by default (and the least one) */
#define TDM_MOTION_MAX_PROBES 16   /* the most probes tdm_motion_rounds_set_any takes */

/* n motions of 2 * n_q values each (start, then end: motions + i * 2 * n_q;
 * borrowed, must outlive mc), finite; resolution finite and > 0; batch >= 1. On
 * success *out is new (free with tdm_motion_rounds_free). Returns 0, TDM_EINVAL (a
 * bad argument), TDM_ERANGE (motion *bad has more than TDM_MOTION_MAX_STATES
 * states) or TDM_ENOMEM. */
int tdm_motion_rounds_create(const double *motions, size_t n, size_t n_q, double resolution, size_t batch,
                            tdm_motion_rounds **out, size_t *bad);
/* Paths: motion i has n_points[i] >= 2 configurations (points, n_q values each, the
 * motions' points one after the other), checked segment by segment, each segment p_s
 * -> p_{s+1} cut into states as a two-point motion is; the states are numbered along
 * the path, a segment's first state (the previous one's last) counted once:
 * n = n_0 + sum_{s>0} (n_s - 1). n_points NULL: every motion has 2. TDM_EINVAL
 * (*bad) for a motion of fewer than 2 points; TDM_ERANGE (*bad) for one of more than
 * TDM_MOTION_MAX_STATES states. */
int tdm_motion_rounds_create_paths(const double *points, const uint32_t *n_points, size_t n, size_t n_q,
                                  double resolution, size_t batch, tdm_motion_rounds **out, size_t *bad);
void tdm_motion_rounds_free(tdm_motion_rounds *mc);
/* The window of the first round: states each open motion gives in it (later rounds
 * double it); TDM_MOTION_FIRST_WINDOW by default. Larger windows take fewer
 * dependent runs per motion (what a GPU engine's latency wants) at the price of
 * states checked past the first collision (what a busy CPU engine pays for).
 * Before the first tdm_motion_rounds_next; 0 keeps the default. */
void tdm_motion_rounds_set_window(tdm_motion_rounds *mc, uint64_t first);
/* Any colliding state will do (see the top): the first round checks `probes` states of each
 * motion coarse to fine (at most TDM_MOTION_MAX_PROBES; 0 gives the first-to-last order with
 * the window's rounds, any state still answering). Before the first tdm_motion_rounds_next. */
void tdm_motion_rounds_set_any(tdm_motion_rounds *mc, unsigned probes);
/* With any: the states after the probes first to last instead of spread (A/B runs). Before the
 * first tdm_motion_rounds_next. */
void tdm_motion_rounds_set_linear(tdm_motion_rounds *mc, int linear);
/* Whether answers are any colliding state (tdm_motion_rounds_set_any), not the first. */
int tdm_motion_rounds_any(const tdm_motion_rounds *mc);
/* Motions in the batch the last tdm_motion_rounds_plan (or next) made: 1 when its states are all
 * one motion's. */
size_t tdm_motion_rounds_segments(const tdm_motion_rounds *mc);
/* The k of the p-th state of a motion of n states in the any-state order: the first `probes`
 * coarse to fine, then the others spread (p < n; probes <= TDM_MOTION_MAX_PROBES). */
uint64_t tdm_motion_rounds_order(uint64_t n, unsigned probes, uint64_t p);
/* State k of motion i, into q[0..n_q). */
void tdm_motion_rounds_state(const tdm_motion_rounds *mc, size_t i, uint64_t k, double *q);

/* The next batch: writes its states' configurations into configs (room for batch *
 * n_q values) and returns their number, or 0 when every motion is answered. The
 * batch must be handed back (tdm_motion_rounds_take) before the next call. */
size_t tdm_motion_rounds_next(tdm_motion_rounds *mc, double *configs);
/* tdm_motion_rounds_next in two steps, for a caller that sizes the batch on one thread
 * and makes its states on another: _plan chooses the next batch's states and returns
 * their number (0 when every motion is answered), _fill writes them into configs. The
 * batch is then handed back as after _next. */
size_t tdm_motion_rounds_plan(tdm_motion_rounds *mc);
void tdm_motion_rounds_fill(const tdm_motion_rounds *mc, double *configs);
/* Which states of the last batch collide: for state i of the batch, the uint32 at
 * (const char *)colliding + i * stride is nonzero when it collides (e.g.
 * &results[0].colliding with stride sizeof(tdm_sched_result)). */
void tdm_motion_rounds_take(tdm_motion_rounds *mc, const uint32_t *colliding, size_t stride);

/* Answers: motion i's smallest colliding state, or -1; valid once next gave 0
 * (motions not yet answered read -2 before). */
int64_t tdm_motion_rounds_answer(const tdm_motion_rounds *mc, size_t i);
/* Motion i's number of states. */
uint64_t tdm_motion_rounds_states(const tdm_motion_rounds *mc, size_t i);
/* The most states a batch holds: the `batch` given, or the motions' states when
 * they are fewer (what the caller's batch buffers need). */
size_t tdm_motion_rounds_batch(const tdm_motion_rounds *mc);
/* Motions answered with a colliding state so far. */
size_t tdm_motion_rounds_colliding(const tdm_motion_rounds *mc);

#endif
