/* Motion checks in rounds of batches: see motion_rounds.h. */
#include "motion_rounds.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../geom/base.h"
#include "motions.h"


/* A run of consecutive states of one motion in a batch: k0 .. k0 + count - 1. */
typedef struct segment { size_t motion; uint64_t k0, count; } segment;

struct tdm_motion_rounds {
    const double *mot;
    size_t n, n_q, batch;
    /* paths: motion i's points start at mot + first_point[i] * n_q; its segment s (from
     * point s to s + 1) has seg_states[first_seg[i] + s] states, the first of which (for
     * s > 0) is the previous segment's last and is not counted again */
    size_t *first_point, *first_seg;
    uint32_t *n_points;
    uint64_t *seg_states;
    uint64_t *n_states, *cursor;
    int64_t *answer;
    size_t *open, n_open, colliding;
    segment *segs;
    size_t n_segs;
    unsigned round;
    size_t i;     /* the next open motion of this round */
    uint64_t w;   /* this round's window */
    uint64_t first; /* the first round's window, and the least one */
    int in_round;
    int any;         /* any colliding state answers (tdm_motion_rounds_set_any) */
    unsigned probes; /* with any: the first round's states, coarse to fine */
    int linear;      /* with any: the states after the probes first to last (tdm_motion_rounds_set_linear) */
};

void tdm_motion_rounds_set_any(tdm_motion_rounds *mc, unsigned probes)
{
    mc->any = 1;
    mc->probes = probes < TDM_MOTION_MAX_PROBES ? probes : TDM_MOTION_MAX_PROBES;
}

int tdm_motion_rounds_any(const tdm_motion_rounds *mc) { return mc->any; }

/* The first m (<= TDM_MOTION_MAX_PROBES) states of a motion of n states, coarse to fine: the
 * end, the interior 1 .. n-2 by bisection (breadth first: the middle, then each half's
 * middle), the start; returns how many (min(m, n)). */
static unsigned probe_states(uint64_t n, unsigned m, uint64_t *k)
{
    unsigned got = 0;
    if (m > n) m = (unsigned)n;
    if (got < m) k[got++] = n - 1;
    uint64_t lo[TDM_MOTION_MAX_PROBES], hi[TDM_MOTION_MAX_PROBES];
    unsigned head = 0, tail = 0;
    if (n > 2) lo[tail] = 1, hi[tail++] = n - 2;
    while (got < m && head < tail) {
        uint64_t a = lo[head], b = hi[head++], mid = a + (b - a) / 2;
        k[got++] = mid;
        /* each interval taken gives a probe, so only the first m - 1 queued are ever taken: the
           queue keeps the first TDM_MOTION_MAX_PROBES */
        if (mid > a && tail < TDM_MOTION_MAX_PROBES) lo[tail] = a, hi[tail++] = mid - 1;
        if (mid < b && tail < TDM_MOTION_MAX_PROBES) lo[tail] = mid + 1, hi[tail++] = b;
    }
    if (got < m && n > 1) k[got++] = 0;
    return got;
}

/* The states after the probes, spread: with a stride S (a power of two, at most SPREAD_MAX, such
 * that the motion has ~SPREAD_CLASS states or more a class), the states k = r, r + S, r + 2S, ...
 * of one residue r after another, the residues in bit-reversed order (0, S/2, S/4, 3S/4, ...):
 * every S-th state first, then those halfway between, and so on. A thin obstacle the probes
 * missed (a colliding span of a few states) is met within the first pass over the motion instead
 * of when a first-to-last cursor reaches it, and a batch of them stops early on the CPU engine
 * (tdm_work.any_stop). S = 1 is first to last. */
#define SPREAD_MAX 64u
#define SPREAD_CLASS 8u

static uint64_t spread_stride(uint64_t n)
{
    uint64_t S = 1;
    while (S < SPREAD_MAX && 2 * S * SPREAD_CLASS <= n) S *= 2;
    return S;
}

static uint64_t bit_reversed(uint64_t j, uint64_t S)
{
    uint64_t r = 0;
    for (uint64_t b = 1; b < S; b *= 2) r = r * 2 + ((j & b) != 0);
    return r;
}

/* The motion's states in check order: its probes, then every other state in the spread order:
 * residue class j (of residue rev[j]) holds the places start[j] .. start[j + 1] - 1 of that
 * order; `sorted`: the probes' places in it, ascending. */
typedef struct order {
    uint64_t k[TDM_MOTION_MAX_PROBES], sorted[TDM_MOTION_MAX_PROBES], start[SPREAD_MAX + 1], rev[SPREAD_MAX], S;
    unsigned m;
} order;

static uint64_t spread_k(const order *o, uint64_t q)
{
    uint64_t lo = 0, hi = o->S; /* the class j with start[j] <= q < start[j + 1] */
    while (hi - lo > 1) {
        uint64_t mid = (lo + hi) / 2;
        if (o->start[mid] <= q) lo = mid;
        else hi = mid;
    }
    return o->rev[lo] + (q - o->start[lo]) * o->S;
}

static uint64_t spread_position(const order *o, uint64_t k)
{
    uint64_t r = k % o->S;
    return o->start[bit_reversed(r, o->S)] + k / o->S; /* bit reversal is its own inverse */
}

static void order_of(order *o, uint64_t n, unsigned probes, int linear)
{
    o->m = probe_states(n, probes, o->k);
    o->S = linear ? 1 : spread_stride(n);
    o->start[0] = 0;
    for (uint64_t j = 0; j < o->S; j++) {
        uint64_t r = bit_reversed(j, o->S);
        o->rev[j] = r;
        o->start[j + 1] = o->start[j] + (r < n ? (n - 1 - r) / o->S + 1 : 0);
    }
    for (unsigned i = 0; i < o->m; i++) {
        uint64_t v = spread_position(o, o->k[i]);
        unsigned j = i;
        for (; j > 0 && o->sorted[j - 1] > v; j--) o->sorted[j] = o->sorted[j - 1];
        o->sorted[j] = v;
    }
}

static uint64_t order_k(const order *o, uint64_t p)
{
    if (p < o->m) return o->k[p];
    uint64_t q = p - o->m; /* the (p - m)-th state of the spread order that is not a probe */
    for (unsigned i = 0; i < o->m && o->sorted[i] <= q; i++) q++;
    return spread_k(o, q);
}

uint64_t tdm_motion_rounds_order(uint64_t n, unsigned probes, uint64_t p)
{
    order o;
    order_of(&o, n, probes < TDM_MOTION_MAX_PROBES ? probes : TDM_MOTION_MAX_PROBES, 0);
    return order_k(&o, p);
}

void tdm_motion_rounds_set_linear(tdm_motion_rounds *mc, int linear) { mc->linear = linear != 0; }

void tdm_motion_rounds_set_window(tdm_motion_rounds *mc, uint64_t first)
{
    mc->first = first ? first : TDM_MOTION_FIRST_WINDOW;
}

void tdm_motion_rounds_free(tdm_motion_rounds *mc)
{
    if (!mc) return;
    free(mc->segs);
    free(mc); /* and its per-motion arrays, in the same block */
}

int tdm_motion_rounds_create(const double *motions, size_t n, size_t n_q, double resolution, size_t batch,
                            tdm_motion_rounds **out, size_t *bad)
{
    return tdm_motion_rounds_create_paths(motions, NULL, n, n_q, resolution, batch, out, bad);
}

int tdm_motion_rounds_create_paths(const double *points, const uint32_t *n_points, size_t n, size_t n_q,
                                  double resolution, size_t batch, tdm_motion_rounds **out, size_t *bad)
{
    *out = NULL;
    if ((n && !points) || batch == 0 || !isfinite(resolution) || !(resolution > 0)) return TDM_EINVAL;
    size_t n_segs = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t p = n_points ? n_points[i] : 2;
        if (p < 2) {
            if (bad) *bad = i;
            return TDM_EINVAL;
        }
        n_segs += p - 1;
    }
    _Static_assert(sizeof(size_t) == 8, "the block's arrays are laid out at 8 bytes an element");
    /* one block for the rounds and their per-motion arrays (a planner's request: one
       allocation on the loop, not nine); every array's elements are 8 bytes but n_points',
       which comes last */
    size_t na = n ? n : 1, ns = n_segs ? n_segs : 1;
    if (na > (SIZE_MAX - sizeof(tdm_motion_rounds)) / 64 - ns) return TDM_ENOMEM;
    tdm_motion_rounds *mc = calloc(1, sizeof *mc + 6 * na * 8 + ns * 8 + na * sizeof(uint32_t));
    if (!mc) return TDM_ENOMEM;
    mc->mot = points;
    mc->n = n;
    mc->n_q = n_q;
    mc->batch = batch;
    mc->first = TDM_MOTION_FIRST_WINDOW;
    unsigned char *at = (unsigned char *)(mc + 1);
    mc->first_point = (size_t *)at, at += na * 8;
    mc->first_seg = (size_t *)at, at += na * 8;
    mc->n_states = (uint64_t *)at, at += na * 8;
    mc->cursor = (uint64_t *)at, at += na * 8;
    mc->answer = (int64_t *)at, at += na * 8;
    mc->open = (size_t *)at, at += na * 8;
    mc->seg_states = (uint64_t *)at, at += ns * 8;
    mc->n_points = (uint32_t *)at;
    size_t pt = 0, sg = 0;
    uint64_t all = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t p = n_points ? n_points[i] : 2;
        mc->first_point[i] = pt;
        mc->first_seg[i] = sg;
        mc->n_points[i] = p;
        uint64_t total = 0;
        for (uint32_t s = 0; s + 1 < p; s++) {
            const double *a = points + (pt + s) * n_q;
            uint64_t ns = tdm__motion_states(a, a + n_q, n_q, resolution);
            total += s ? ns - 1 : ns;
            if (!ns || total > TDM_MOTION_MAX_STATES) {
                if (bad) *bad = i;
                tdm_motion_rounds_free(mc);
                return TDM_ERANGE;
            }
            mc->seg_states[sg + s] = ns;
        }
        mc->n_states[i] = total;
        pt += p;
        sg += p - 1;
        mc->answer[i] = -2;
        mc->open[i] = i;
        all += total;
    }
    mc->n_open = n;
    /* no batch holds more than every state */
    if (mc->batch > all) mc->batch = all ? (size_t)all : 1;
    mc->segs = malloc(mc->batch * sizeof *mc->segs); /* a segment has at least one state */
    if (!mc->segs) {
        tdm_motion_rounds_free(mc);
        return TDM_ENOMEM;
    }
    *out = mc;
    return TDM_OK;
}

void tdm_motion_rounds_state(const tdm_motion_rounds *mc, size_t i, uint64_t k, double *q)
{
    size_t n_q = mc->n_q;
    const double *p = mc->mot + mc->first_point[i] * n_q;
    const uint64_t *ns = mc->seg_states + mc->first_seg[i];
    uint32_t s = 0;
    /* segment 0 holds k = 0 .. ns[0] - 1; segment s > 0 its states 1 .. ns[s] - 1 after the ones before */
    while (s + 2 < mc->n_points[i] && k >= ns[s]) {
        k -= ns[s] - 1;
        s++;
    }
    tdm__motion_state(p + s * n_q, p + (s + 1) * n_q, n_q, k, ns[s], q);
}

size_t tdm_motion_rounds_plan(tdm_motion_rounds *mc)
{
    size_t batch = mc->batch;
    for (;;) {
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
            uint64_t w = batch / mc->n_open, grow = mc->round < 40 && mc->first <= (UINT64_MAX >> mc->round)
                                                          ? mc->first << mc->round : UINT64_MAX;
            if (w > grow) w = grow;
            if (w < mc->first) w = mc->first;
            if (mc->any && mc->probes && mc->round == 0) w = mc->probes; /* the probes, coarse to fine */
            mc->w = w;
            mc->i = 0;
            mc->in_round = 1;
        }
        /* one batch of the round: each open motion gives up to w states from its cursor */
        size_t n_b = 0;
        mc->n_segs = 0;
        for (; mc->i < mc->n_open && n_b < batch; mc->i++) {
            size_t m = mc->open[mc->i];
            uint64_t left = mc->n_states[m] - mc->cursor[m], take = left < mc->w ? left : mc->w;
            if (!left) continue; /* answered in the batch that cut it off */
            if (take > batch - n_b) take = batch - n_b;
            mc->segs[mc->n_segs++] = (segment){m, mc->cursor[m], take};
            n_b += take;
            mc->cursor[m] += take;
            /* a motion cut off by a full batch goes on in this round's next batch */
            if (take < mc->w && mc->cursor[m] < mc->n_states[m]) break;
        }
        if (n_b) return n_b;
        /* only answered motions were left this round: the next one */
    }
}

void tdm_motion_rounds_fill(const tdm_motion_rounds *mc, double *configs)
{
    size_t n_q = mc->n_q, n_b = 0;
    for (size_t s = 0; s < mc->n_segs; s++) {
        const segment *g = &mc->segs[s];
        if (mc->any && mc->probes) { /* positions k0 .. in the motion's check order */
            order o;
            order_of(&o, mc->n_states[g->motion], mc->probes, mc->linear);
            for (uint64_t p = g->k0; p < g->k0 + g->count; p++, n_b++)
                tdm_motion_rounds_state(mc, g->motion, order_k(&o, p), configs + n_b * n_q);
            continue;
        }
        for (uint64_t k = g->k0; k < g->k0 + g->count; k++, n_b++) tdm_motion_rounds_state(mc, g->motion, k, configs + n_b * n_q);
    }
}

size_t tdm_motion_rounds_next(tdm_motion_rounds *mc, double *configs)
{
    size_t n_b = tdm_motion_rounds_plan(mc);
    if (n_b) tdm_motion_rounds_fill(mc, configs);
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
        if (k < g->count) {
            uint64_t answer = g->k0 + k; /* in order: the first colliding state */
            if (mc->any && mc->probes) { /* in check order: the smallest colliding k of the batch */
                order o;
                order_of(&o, mc->n_states[g->motion], mc->probes, mc->linear);
                answer = order_k(&o, answer);
                for (uint64_t x = k + 1; x < g->count; x++)
                    if (*(const uint32_t *)(const void *)(base + (b + x) * stride)) {
                        uint64_t kx = order_k(&o, g->k0 + x);
                        if (kx < answer) answer = kx;
                    }
            }
            mc->answer[g->motion] = (int64_t)answer;
            mc->cursor[g->motion] = mc->n_states[g->motion]; /* closed */
            mc->colliding++;
        } else if (mc->cursor[g->motion] == mc->n_states[g->motion]) {
            mc->answer[g->motion] = -1;
        }
        b += g->count;
    }
    mc->n_segs = 0;
}

int64_t tdm_motion_rounds_answer(const tdm_motion_rounds *mc, size_t i) { return mc->answer[i]; }
uint64_t tdm_motion_rounds_states(const tdm_motion_rounds *mc, size_t i) { return mc->n_states[i]; }
size_t tdm_motion_rounds_batch(const tdm_motion_rounds *mc) { return mc->batch; }
size_t tdm_motion_rounds_segments(const tdm_motion_rounds *mc) { return mc->n_segs; }
size_t tdm_motion_rounds_colliding(const tdm_motion_rounds *mc) { return mc->colliding; }
