/* Types shared by every engine (CPU, GPU-resident, hybrid): what a pose query
 * asks and what it answers. */
#ifndef TDM_GEOM_QUERY_H
#define TDM_GEOM_QUERY_H

#include "base.h"
#include "vec.h"

typedef enum tdm_mode {
    TDM_MODE_BOOL = 0,    /* any intersecting triangle pair: stop at the first */
    TDM_MODE_CONTACTS = 1 /* every intersecting triangle pair, up to a cap */
} tdm_mode;

/* A pair of intersecting triangles, as indices into the two meshes' triangle arrays. */
typedef struct tdm_pair { uint32_t a_tri, b_tri; } tdm_pair;

typedef struct tdm_collide_result {
    uint32_t colliding; /* 1 if any triangle pair intersects */
    uint32_t truncated; /* contacts mode: a pair beyond max_pairs exists */
    uint32_t n_pairs;   /* pairs found: 0/1 in bool mode, <= max_pairs in contacts mode */
    tdm_pair first;     /* the first pair found, valid when colliding */
    uint32_t box_tests; /* box pairs tested (work statistics, for cost models) */
    uint32_t tri_tests; /* triangle pairs tested */
} tdm_collide_result;

/* A work account (issue 14): what a request may cost and what it has cost,
 * shared by every task made for it. The CPU engine adds each traversal's box
 * and triangle tests in steps of TDM_WORK_STEP and stops a traversal at its
 * next step once `used` passes `limit` or `stop` is set, setting `over`; the
 * caller then discards the request's answers (tdm_work_verdict). A traversal
 * charges nothing itself for its first 16 384 box tests (workpile/cpu_engine.c's
 * CAREFUL_AFTER, and the triangle tests among them, four per leaf pair at
 * most), then every TDM_WORK_STEP tests; short traversals are added by the
 * engine's threads in batches of at most 64 Ki tests or one chunk of tasks, and
 * a task whose account is over is not run. A request's cost is thus bounded by
 * its limit plus about 5 x 16 384 tests per traversal in flight and one batch
 * per thread. The GPU engines
 * run in bounded device buffers and do not count (a chunk over them falls back
 * to the CPU engine, which does). Fields are read and written with the
 * __atomic builtins (this header is also compiled as CUDA C++, which has no
 * _Atomic). */
#define TDM_WORK_STEP 4096u
typedef struct tdm_work {
    uint64_t limit; /* box + triangle tests allowed; 0: no limit */
    uint64_t used;  /* counted so far (atomic) */
    int stop;       /* set by anyone to give the request up, e.g. its client went away (atomic) */
    int over;       /* set by a traversal that stopped early (atomic) */
    int any_stop;   /* the queries on this account ask one question, whether any of them collides (a
                       planner's motion asking for any colliding state): once one collides (`hit`),
                       the CPU engine runs no more of the account's tasks and answers those queries
                       free (bool mode): the ones after it on the same thread, and whatever other
                       threads had not run yet */
    int hit;        /* with any_stop: set by the CPU engine when one of its tasks collided (atomic) */
} tdm_work;

/* What became of the work: TDM_OK (every traversal ran to its answer),
 * TDM_ECANCELED (given up through `stop`) or TDM_EBUDGET. */
static inline int tdm_work_verdict(const tdm_work *w)
{
    if (!w || !__atomic_load_n(&w->over, __ATOMIC_ACQUIRE)) return 0;
    return __atomic_load_n(&w->stop, __ATOMIC_RELAXED) ? TDM_ECANCELED : TDM_EBUDGET;
}

/* One task, the unit every engine runs: does tree B, placed in A's frame by
 * b_in_a, touch tree A? Collision is surface-only (triangles against triangles;
 * a mesh inside another without touching it does not collide) and touching
 * counts, as in FCL. The scheduler (workpile/) makes one per (query, checked
 * object pair). */
typedef struct tdm_bvh tdm_bvh;
struct tdm_gpu_mesh; /* a tree's device copy (gpu/), opaque here */
typedef struct tdm_task {
    const tdm_bvh *a, *b;               /* host trees, borrowed; must outlive the run */
    const struct tdm_gpu_mesh *ga, *gb; /* their device copies, for the GPU engines; else NULL */
    tdm_xform b_in_a;                   /* maps B's mesh frame into A's */
    tdm_mode mode;
    uint32_t max_pairs;                 /* contacts mode: stop after this many pairs (>= 1) */
    tdm_pair *pairs;                    /* optional, borrowed: room for max_pairs pairs (contacts mode,
                                           CPU engine) */
    tdm_work *work;                     /* optional, borrowed: the account this task counts against */
    uint32_t group;                     /* bool mode, optional (0: none): the tasks of one query, listed
                                           together in its check order, share a nonzero group; once one of
                                           them collides the CPU engine answers the group's later ones on that
                                           thread as free, unrun (its first colliding check, which names the
                                           answer's pair, comes first) */
} tdm_task;

#endif
