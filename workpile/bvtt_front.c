/* BVTT fronts: sprout and prune (bvtt_front.h). The descent from each front pair
 * is tdm_collide's lazy one (cpu_engine.c: depth first, a pair's boxes tested
 * when it is popped), with the same box test, tolerance and leaf test. */
#include "bvtt_front.h"

#include <stdlib.h>
#include <string.h>

#include "cpu_engine.h"

#include "../geom/leaf.h"

/* Pending pairs of one descent: as in cpu_engine.c, at most three more per BVTT
 * level, from any starting pair. */
#define STACK_CAP (4 * 2 * TDM_BVH_MAX_DEPTH + 8)

/* Bits on a front's pairs besides the node indices (trees of more than 2^30
 * nodes are checked by tdm_collide instead):
 *   SPLIT_A (on a), SPLIT_B (on b): how the pair's parent in the BVTT split, so
 *     that a group of siblings names its parent exactly (kept across checks);
 *   APART (on a): the pair's boxes were found apart at this state;
 *   FRESH (on b): the pair was reached by sprouting at this state, so its parent
 *     was just found overlapping and testing it again to prune would be wasted.
 * APART and FRESH are read only by the check that writes them, and masked off
 * when a front is read, so no pass clears them. */
#define APART 0x80000000u
#define FRESH 0x80000000u
#define SPLIT_A 0x40000000u
#define SPLIT_B 0x40000000u
#define NODE TDM_FRONT_NODE

void tdm_front_init(tdm_front *f)
{
    memset(f, 0, sizeof *f);
    f->prune_every = TDM_FRONT_PRUNE_EVERY;
}

void tdm_front_fini(tdm_front *f)
{
    free(f->pairs);
    free(f->next);
    tdm_front_init(f);
}

void tdm_front_reset(tdm_front *f)
{
    f->a = f->b = NULL;
    f->n = f->checks = 0;
}

typedef struct walk {
    const tdm_bvh_node *A, *B;
    const tdm_task *task;
    tdm_fxform fx;
    float tol;
    tdm_collide_result *res;
    tdm_front_pair *out; /* the next front, being written */
    uint32_t n, cap;
} walk;

static int apart(walk *w, uint32_t a, uint32_t b)
{
    tdm_wbox wb;
    tdm_wbox_of(&w->fx, &w->B[b], &wb);
    w->res->box_tests++;
    return !tdm_obb_overlap_w(&w->A[a], &wb, w->B[b].extent, w->tol);
}

static int emit(walk *w, uint32_t a, uint32_t b)
{
    if (w->n == w->cap) {
        if (w->cap > UINT32_MAX / 2) return -1;
        uint32_t cap = w->cap ? 2 * w->cap : 256;
        tdm_front_pair *p = realloc(w->out, sizeof *p * cap);
        if (!p) return -1;
        w->out = p;
        w->cap = cap;
    }
    w->out[w->n++] = (tdm_front_pair){a, b};
    return 0;
}

/* How the BVTT reaches (a, b) from its parent: *sa (*sb) when the parent split
 * A's (B's) node. The BVTT is a tree (each pair's children follow from the pair
 * alone), so the walk down from the roots towards (a, b) is unique; a subtree of
 * the depth-first layout is the index range from its root to its last node, so
 * the child towards a is the left one exactly when a < the right one. Returns 0,
 * or -1 when (a, b) is not a pair of the BVTT. Runs only when a prune succeeds. */
static int parent_split(const walk *w, uint32_t a, uint32_t b, int *sa, int *sb)
{
    uint32_t x = 0, y = 0;
    *sa = *sb = 0;
    while (x != a || y != b) {
        uint32_t ca[2], cb[2];
        int nca, ncb;
        if (!tdm_bvtt_children(&w->A[x], x, &w->B[y], y, ca, &nca, cb, &ncb)) return -1;
        if (nca == 2) {
            if (x == a) return -1;
            x = a < ca[1] ? ca[0] : ca[1];
        }
        if (ncb == 2) {
            if (y == b) return -1;
            y = b < cb[1] ? cb[0] : cb[1];
        }
        *sa = nca == 2;
        *sb = ncb == 2;
    }
    return 0;
}

/* Are the last k (2 or 4) pairs written, all found apart at this state (none
 * fresh), exactly the children of one pair *P of the BVTT, in tdm_bvtt_children's
 * order? The first of them names P: its split bits say which of its nodes are
 * the left children (node i + 1) of P's. */
static int group_parent(const walk *w, uint32_t k, tdm_front_pair *P)
{
    const tdm_front_pair *g = &w->out[w->n - k];
    for (uint32_t i = 0; i < k; i++)
        if (!(g[i].a & APART) || (g[i].b & FRESH)) return 0;
    uint32_t a0 = g[0].a & NODE, b0 = g[0].b & NODE;
    int sa = (g[0].a & SPLIT_A) != 0, sb = (g[0].b & SPLIT_B) != 0;
    if (!sa && !sb) return 0; /* the root pair */
    if ((sa && (a0 == 0 || tdm_node_is_leaf(&w->A[a0 - 1]))) || (sb && (b0 == 0 || tdm_node_is_leaf(&w->B[b0 - 1]))))
        return 0;
    uint32_t pa = a0 - (uint32_t)sa, pb = b0 - (uint32_t)sb, ca[2], cb[2];
    int nca, ncb;
    if ((uint32_t)tdm_bvtt_children(&w->A[pa], pa, &w->B[pb], pb, ca, &nca, cb, &ncb) != k) return 0;
    for (int i = 0, x = 0; i < nca; i++)
        for (int j = 0; j < ncb; j++, x++)
            if ((g[x].a & NODE) != ca[i] || (g[x].b & NODE) != cb[j]) return 0;
    *P = (tdm_front_pair){pa, pb};
    return 1;
}

/* Prune: while the pairs just written complete a sibling group that is all
 * apart and their parent's boxes are apart too, the parent replaces them. */
static void prune(walk *w)
{
    for (;;) {
        tdm_front_pair P;
        int sa, sb;
        uint32_t k = w->n >= 4 && group_parent(w, 4, &P) ? 4 : w->n >= 2 && group_parent(w, 2, &P) ? 2 : 0;
        if (!k || !apart(w, P.a, P.b) || parent_split(w, P.a, P.b, &sa, &sb)) return;
        w->n -= k; /* P fits where k >= 2 pairs were */
        w->out[w->n++] = (tdm_front_pair){P.a | APART | (sa ? SPLIT_A : 0), P.b | (sb ? SPLIT_B : 0)};
    }
}

int tdm_front_collide(tdm_front *f, const tdm_task *task, tdm_collide_result *res)
{
    if (task->mode != TDM_MODE_BOOL) return TDM_EINVAL;
    if (task->a->n_nodes > NODE + 1u || task->b->n_nodes > NODE + 1u) {
        tdm_front_reset(f);
        tdm_collide(task, res);
        return TDM_OK;
    }
    if (f->a != task->a || f->b != task->b) {
        tdm_front_reset(f);
        f->a = task->a;
        f->b = task->b;
    }
    res->colliding = res->truncated = res->n_pairs = res->box_tests = res->tri_tests = 0;
    res->first.a_tri = res->first.b_tri = 0;

    const tdm_bvh *ta = task->a, *tb = task->b;
    walk w = {ta->nodes, tb->nodes, task, tdm_fxform_of(&task->b_in_a), 0, res, f->next, 0, f->next_cap};
    w.tol = tdm_obb_tolerance(ta->radius, tb->radius, (float)tdm_d3_len(task->b_in_a.t));
    static const tdm_front_pair root = {0, 0};
    const tdm_front_pair *old = f->n ? f->pairs : &root;
    uint32_t n_old = f->n ? f->n : 1, i;
    tdm_front_pair stack[STACK_CAP];
    int sp = 0, done = 0;
    int try_prune = f->n && f->prune_every && ++f->checks % f->prune_every == 0;

    for (i = 0; i < n_old && !done; i++) {
        sp = 0;
        stack[sp++] = (tdm_front_pair){old[i].a & ~APART, old[i].b & ~FRESH};
        while (sp > 0) {
            tdm_front_pair p = stack[--sp];
            uint32_t pa = p.a & NODE, pb = p.b & NODE;
            if (apart(&w, pa, pb)) { /* stays (or is pruned) */
                if (emit(&w, p.a | APART, p.b)) goto oom;
                if (try_prune) prune(&w);
                continue;
            }
            uint32_t ca[2], cb[2];
            int nca, ncb;
            if (!tdm_bvtt_children(&w.A[pa], pa, &w.B[pb], pb, ca, &nca, cb, &ncb)) {
                const tdm_bvh_node *na = &w.A[pa], *nb = &w.B[pb];
                uint32_t m = tdm_leaf_intersect(na, ta->tri_verts, nb, tb->tri_verts, &task->b_in_a, 1);
                res->tri_tests += tdm_result_add_leaf(res, TDM_MODE_BOOL, task->max_pairs, task->pairs, m, na,
                                                      ta->tri_ids, nb, tb->tri_ids);
                if (emit(&w, p.a, p.b)) goto oom;
                if (res->colliding) {
                    done = 1;
                    break;
                }
                continue;
            }
            /* sprout: pushed in reverse so that the first children are visited first */
            uint32_t ka = nca == 2 ? SPLIT_A : 0, kb = (ncb == 2 ? SPLIT_B : 0) | FRESH;
            for (int x = nca - 1; x >= 0; x--)
                for (int y = ncb - 1; y >= 0; y--) stack[sp++] = (tdm_front_pair){ca[x] | ka, cb[y] | kb};
        }
    }
    if (done) { /* the pairs not reached stay on the front as they are, in order */
        while (sp > 0) {
            tdm_front_pair p = stack[--sp];
            if (emit(&w, p.a, p.b & ~FRESH)) goto oom;
        }
        for (; i < n_old; i++)
            if (emit(&w, old[i].a & ~APART, old[i].b & ~FRESH)) goto oom;
    }
    f->next = f->pairs;
    f->next_cap = f->cap;
    f->pairs = w.out;
    f->cap = w.cap;
    f->n = w.n;
    return TDM_OK;

oom:
    f->next = w.out; /* kept for the next try */
    f->next_cap = w.cap;
    tdm_front_reset(f);
    tdm_collide(task, res);
    return TDM_ENOMEM;
}
