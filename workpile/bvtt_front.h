/* BVTT fronts: one mesh pair checked at a sequence of nearby transforms (the
 * states of a motion), each check starting from where the previous one stopped
 * instead of from the roots (seed paper 002, "BVTT front-based traversal":
 * sprout and prune; issue 13, point 5).
 *
 * A measured experiment: no engine uses it. On the Panda's motions at R = 0.05
 * rad (bench/results/fronts.md) it tests no fewer boxes than a descent from the
 * roots and runs at the same speed with early exit and 7-21% slower over whole
 * motions (most kept pairs end at the root pair, a descent averages 3-17 box
 * tests a kept pair, and a state moves the links by centimetres, so fronts go
 * stale); it wins only at much finer steps (R = 0.002 rad: 0.71 of the time).
 *
 * The front. The node pairs of the bounding-volume test tree (BVTT: the node
 * pairs tdm_collide's simultaneous descent visits, geom/bvh.h's
 * tdm_bvtt_children) where the last check's descent stopped: box pairs found
 * apart, leaf pairs whose triangles were tested, and, when a check ended early
 * (bool mode stops at the first intersecting triangle pair), the pairs it had
 * not reached yet. The front always covers every (leaf of A, leaf of B) pair
 * exactly once (a node pair (a, b) stands for leaves(a) x leaves(b)), so
 * checking every one of its pairs decides the state: that invariant, not the
 * path the descent took, is what keeps the answers exact. A new front is the
 * root pair alone.
 *
 * A check (tdm_front_collide) walks the front in order. Each pair is tested
 * against the new transform and descended from, exactly as tdm_collide descends
 * from the roots (lazy, depth first, the same box and leaf tests): a pair whose
 * boxes now overlap sprouts, one whose boxes are apart stays. The pairs where
 * this state's descent stops, in depth-first order, are the next front. Prune:
 * whenever the last pairs written are all the children of their parent P in the
 * BVTT (the 2 or 4 that tdm_bvtt_children gives for P), all found apart at this
 * state and none just sprouted, P's boxes are tested too and, if apart, P
 * replaces them (and may complete its own parent's group in turn), so a front
 * shrinks back to the root pair as the meshes separate. Every front pair is a
 * pair of the BVTT and remembers how its parent split (two bits), so a sibling
 * group names its parent exactly; P's own bits come from a walk down from the
 * roots (O(depth), only when a prune succeeds).
 *
 * Answers. Bool mode only. res is tdm_collide's for the same task in colliding,
 * n_pairs and first: both walk a cover of the leaf pairs in the same depth-first
 * order with the same conservative box test and exact leaf test, so both stop at
 * the same first intersecting pair. box_tests counts every box pair tested, the
 * prune tests included; tri_tests as tdm_collide counts them.
 *
 * Memory. A tdm_front owns its two arrays (the front and the one the next front
 * is written into; they swap after each check) and grows them as needed; it
 * borrows the two trees of the last check, which must outlive the next call or
 * tdm_front_reset. It knows its trees by address: reset it before a check
 * whose trees may be new ones at a freed tree's address. Threads: one thread per front at a time; fronts share
 * nothing, so threads may each check their own. */
#ifndef TDM_WORKPILE_BVTT_FRONT_H
#define TDM_WORKPILE_BVTT_FRONT_H

#include <stdint.h>

#include "../geom/bvh.h"
#include "../geom/query.h"

/* A front pair: the node indices in A's and B's tree are the low 30 bits
 * (TDM_FRONT_NODE) of a and b; the bits above are the front's bookkeeping. Trees
 * of more than 2^30 nodes are checked by tdm_collide, without a front. */
#define TDM_FRONT_NODE 0x3fffffffu
typedef struct tdm_front_pair { uint32_t a, b; } tdm_front_pair;

typedef struct tdm_front {
    const tdm_bvh *a, *b;  /* the trees the front belongs to (borrowed); NULL: none yet */
    tdm_front_pair *pairs; /* n pairs, depth-first order; owned */
    uint32_t n, cap;
    tdm_front_pair *next;  /* the next front is written here; owned */
    uint32_t next_cap;
    uint32_t prune_every; /* prune only on every prune_every-th check (0: never); see below */
    uint32_t checks;      /* checks since the front was last reset */
} tdm_front;

/* Prune attempts cost a box test of the parent each, and a group of pairs that
 * stays apart below a parent that keeps overlapping would pay it at every state;
 * fresh groups (just sprouted: their parent was just found overlapping) are never
 * tried. tdm_front_init sets prune_every to this. Measured on the Panda's motions
 * (bench/results/fronts.md): every 4th check was the fastest of 1, 2 and 4 in
 * every row that compares them (at R = 0.05 rad 1-4% faster than every check, at
 * R = 0.002 rad 13%), although every check tests the fewest boxes; never (0)
 * lets fronts only grow (2.5x the box tests). Testing the parent of a group that
 * was apart before its members ("prune ahead") tested fewer boxes still but ran
 * 3-18% slower (the group check on every front pair costs more than it saves),
 * so it was not kept. */
#define TDM_FRONT_PRUNE_EVERY 4u

/* An empty front (no memory yet, prune_every TDM_FRONT_PRUNE_EVERY): its first
 * check descends from the roots. */
void tdm_front_init(tdm_front *f);
/* Frees the front's arrays; f may be initialised again. */
void tdm_front_fini(tdm_front *f);
/* Forgets the front (the next check descends from the roots); keeps the memory. */
void tdm_front_reset(tdm_front *f);

/* Checks task (bool mode; task->a, task->b validated trees) from f's front and
 * leaves the front of this check in f. A task whose trees are not f's starts
 * from the roots. Writes the answer into res (see "Answers"). Returns 0;
 * TDM_EINVAL for a task in contacts mode (res is not written, f unchanged);
 * TDM_ENOMEM when the front could not grow: res still holds the answer (then
 * tdm_collide's) and f is reset. Never allocates once its arrays are large
 * enough for the fronts it meets. */
int tdm_front_collide(tdm_front *f, const tdm_task *task, tdm_collide_result *res);

#endif
