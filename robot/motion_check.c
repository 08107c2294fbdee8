/* Motion checks in rounds of batches: see motion_check.h. */
#include "motion_check.h"

#include <math.h>
#include <stdlib.h>

#include "../geom/base.h"
#include "motions.h"

#define MIN_WINDOW 16 /* states a motion gives per round, at least */

/* A run of consecutive states of one motion in a batch: k0 .. k0 + count - 1. */
typedef struct segment { size_t motion; uint64_t k0, count; } segment;

struct tdm_motion_rounds {
    const double *mot;
    size_t n, n_q, batch;
    uint64_t *n_states, *cursor;
    int64_t *answer;
    size_t *open, n_open, colliding;
    segment *segs;
    size_t n_segs;
    unsigned round;
    size_t i;     /* the next open motion of this round */
    uint64_t w;   /* this round's window */
    int in_round;
};

void tdm_motion_rounds_free(tdm_motion_rounds *mc)
{
    if (!mc) return;
    free(mc->n_states);
    free(mc->cursor);
    free(mc->answer);
    free(mc->open);
    free(mc->segs);
    free(mc);
}

int tdm_motion_rounds_create(const double *motions, size_t n, size_t n_q, double resolution, size_t batch,
                            tdm_motion_rounds **out, size_t *bad)
{
    *out = NULL;
    if ((n && !motions) || batch == 0 || !isfinite(resolution) || !(resolution > 0)) return TDM_EINVAL;
    tdm_motion_rounds *mc = calloc(1, sizeof *mc);
    if (!mc) return TDM_ENOMEM;
    size_t na = n ? n : 1;
    mc->mot = motions;
    mc->n = n;
    mc->n_q = n_q;
    mc->batch = batch;
    mc->n_states = malloc(na * sizeof *mc->n_states);
    mc->cursor = calloc(na, sizeof *mc->cursor);
    mc->answer = malloc(na * sizeof *mc->answer);
    mc->open = malloc(na * sizeof *mc->open);
    mc->segs = malloc(batch * sizeof *mc->segs); /* a segment has at least one state */
    if (!mc->n_states || !mc->cursor || !mc->answer || !mc->open || !mc->segs) {
        tdm_motion_rounds_free(mc);
        return TDM_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const double *a = motions + i * 2 * n_q;
        mc->n_states[i] = tdm__motion_states(a, a + n_q, n_q, resolution);
        if (!mc->n_states[i]) {
            if (bad) *bad = i;
            tdm_motion_rounds_free(mc);
            return TDM_ERANGE;
        }
        mc->answer[i] = -2;
        mc->open[i] = i;
    }
    mc->n_open = n;
    *out = mc;
    return TDM_OK;
}

size_t tdm_motion_rounds_next(tdm_motion_rounds *mc, double *configs)
{
    size_t n_q = mc->n_q, batch = mc->batch;
    if (mc->in_round && mc->i >= mc->n_open) {
        /* the round is over: close the answered motions; the others keep their order */
        size_t kept = 0;
        for (size_t j = 0; j < mc->n_open; j++)
            if (mc->cursor[mc->open[j]] < mc->n_states[mc->open[j]]) mc->open[kept++] = mc->open[j];
        mc->n_open = kept;
        mc->round++;
        mc->in_round = 0;
    }
    if (!mc->n_open) return 0;
    if (!mc->in_round) {
        uint64_t w = batch / mc->n_open, grow = mc->round < 40 ? (uint64_t)MIN_WINDOW << mc->round : UINT64_MAX;
        if (w > grow) w = grow;
        if (w < MIN_WINDOW) w = MIN_WINDOW;
        mc->w = w;
        mc->i = 0;
        mc->in_round = 1;
    }
    /* one batch of the round: each open motion gives up to w states from its cursor */
    size_t n_b = 0;
    mc->n_segs = 0;
    for (; mc->i < mc->n_open && n_b < batch; mc->i++) {
        size_t m = mc->open[mc->i];
        const double *a = mc->mot + m * 2 * n_q;
        uint64_t left = mc->n_states[m] - mc->cursor[m], take = left < mc->w ? left : mc->w;
        if (!left) continue; /* answered in the batch that cut it off */
        if (take > batch - n_b) take = batch - n_b;
        mc->segs[mc->n_segs++] = (segment){m, mc->cursor[m], take};
        for (uint64_t k = mc->cursor[m]; k < mc->cursor[m] + take; k++, n_b++)
            tdm__motion_state(a, a + n_q, n_q, k, mc->n_states[m], configs + n_b * n_q);
        mc->cursor[m] += take;
        /* a motion cut off by a full batch goes on in this round's next batch */
        if (take < mc->w && mc->cursor[m] < mc->n_states[m]) break;
    }
    if (n_b == 0) return tdm_motion_rounds_next(mc, configs); /* only answered motions were left this round */
    return n_b;
}

void tdm_motion_rounds_take(tdm_motion_rounds *mc, const uint32_t *colliding, size_t stride)
{
    size_t b = 0;
    const char *base = (const char *)colliding;
    for (size_t s = 0; s < mc->n_segs; s++) {
        const segment *g = &mc->segs[s];
        uint64_t k = 0;
        while (k < g->count && !*(const uint32_t *)(const void *)(base + (b + k) * stride)) k++;
        b += g->count;
        if (k < g->count) {
            mc->answer[g->motion] = (int64_t)(g->k0 + k);
            mc->cursor[g->motion] = mc->n_states[g->motion]; /* closed */
            mc->colliding++;
        } else if (mc->cursor[g->motion] == mc->n_states[g->motion]) {
            mc->answer[g->motion] = -1;
        }
    }
    mc->n_segs = 0;
}

int64_t tdm_motion_rounds_answer(const tdm_motion_rounds *mc, size_t i) { return mc->answer[i]; }
uint64_t tdm_motion_rounds_states(const tdm_motion_rounds *mc, size_t i) { return mc->n_states[i]; }
size_t tdm_motion_rounds_colliding(const tdm_motion_rounds *mc) { return mc->colliding; }
