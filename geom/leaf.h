/* Leaf pairs: the triangle tests of two leaves, and how their intersecting pairs
 * add up to a tdm_collide_result. Written once for every engine: the CPU engine
 * (workpile/cpu_engine.c), the hybrid engine's leaf kernel and host collect
 * (gpu/hybrid.cu) and the GPU-resident engine's triangle kernels
 * (gpu/resident.cu), which is what makes their answers agree pair for pair.
 *
 * Frames. A task places B in A's frame by a tdm_xform in double. A's triangles
 * are tested as stored (floats widened to double); B's are moved by the
 * transform, vertex by vertex (tdm_xform_apply, which rounds the same on host
 * and device). The triangles of a leaf are the slots tdm_leaf_first ..
 * tdm_leaf_first + tdm_leaf_count - 1 of the tree's leaf-order array, 9 floats
 * each.
 *
 * Masks. A leaf holds one or two triangles, so a leaf pair has at most 2 x 2
 * triangle pairs: bit 2 * i + j of a mask stands for A's triangle i with B's
 * triangle j, and "in order" means i outer, j inner (bits 0, 1, 2, 3).
 *
 * Registers. These are `static inline TDM_HD` with plain arrays and no function
 * pointers, so nvcc inlines them into the kernels; the leaf loop holds B's (at
 * most two) moved triangles and one of A's at a time. The GPU-resident engine's
 * first triangle pass (gpu/resident.cu, tri_filter_kernel) runs the same loop
 * with the cheap predicate tdm_tri_planes_separate on these loaders, written out
 * in the kernel: as a function here it cost that kernel two registers and 1-2%
 * of its time. */
#ifndef TDM_GEOM_LEAF_H
#define TDM_GEOM_LEAF_H

#include "bv.h"
#include "query.h"
#include "tri.h"

/* ---- loading ------------------------------------------------------------- */

/* A triangle stored as 9 floats, in double. */
TDM_INLINE TDM_HD void tdm_tri_load(const float *v, tdm_dvec3 out[3])
{
    for (int k = 0; k < 3; k++) out[k] = tdm_d3(v[3 * k], v[3 * k + 1], v[3 * k + 2]);
}

/* A triangle of B stored as 9 floats, moved into A's frame by x. */
TDM_INLINE TDM_HD void tdm_tri_load_moved(const float *v, const tdm_xform *x, tdm_dvec3 out[3])
{
    tdm_tri_load(v, out);
    for (int k = 0; k < 3; k++) out[k] = tdm_xform_apply(x, out[k]);
}

/* B's leaf nb (triangles in b_tris) moved into A's frame: tb[j] for j <
 * tdm_leaf_count(nb), which it returns. */
TDM_INLINE TDM_HD uint32_t tdm_leaf_load_moved(const tdm_bvh_node *nb, const float *b_tris, const tdm_xform *x,
                                               tdm_dvec3 tb[2][3])
{
    uint32_t fb = tdm_leaf_first(nb), cb = tdm_leaf_count(nb);
    for (uint32_t j = 0; j < cb; j++) tdm_tri_load_moved(&b_tris[9 * (size_t)(fb + j)], x, tb[j]);
    return cb;
}

/* ---- the tests ----------------------------------------------------------- */

/* Exact: one triangle pair given by slot, A's (a_tris[9 * a_slot..]) as stored
 * and B's moved by x. The GPU-resident engine's second triangle pass tests its
 * workpile this way, one pair per thread. */
TDM_INLINE TDM_HD int tdm_tri_pair_intersect(const float *a_tris, uint32_t a_slot, const float *b_tris,
                                             uint32_t b_slot, const tdm_xform *x)
{
    tdm_dvec3 ta[3], tb[3];
    tdm_tri_load(&a_tris[9 * (size_t)a_slot], ta);
    tdm_tri_load_moved(&b_tris[9 * (size_t)b_slot], x, tb);
    return tdm_tri_tri_intersect(ta, tb);
}

/* Exact: the mask of the intersecting triangle pairs of leaves na (of A,
 * triangles in a_tris) and nb (of B, triangles in b_tris, placed by x). With
 * first_only the pairs are tested in order and the test stops at the first
 * that intersects (the mask then has that one bit); pass a constant, so that
 * the branch compiles away. */
TDM_INLINE TDM_HD uint32_t tdm_leaf_intersect(const tdm_bvh_node *na, const float *a_tris, const tdm_bvh_node *nb,
                                              const float *b_tris, const tdm_xform *x, int first_only)
{
    uint32_t fa = tdm_leaf_first(na), ca = tdm_leaf_count(na), mask = 0;
    tdm_dvec3 tb[2][3], ta[3];
    uint32_t cb = tdm_leaf_load_moved(nb, b_tris, x, tb);
    for (uint32_t i = 0; i < ca; i++) {
        tdm_tri_load(&a_tris[9 * (size_t)(fa + i)], ta);
        for (uint32_t j = 0; j < cb; j++)
            if (tdm_tri_tri_intersect(ta, tb[j])) {
                mask |= 1u << (2 * i + j);
                if (first_only) return mask;
            }
    }
    return mask;
}

/* ---- results ------------------------------------------------------------- */

/* The rule every engine counts by. The first intersecting pair found makes the
 * result colliding and is kept as `first`. Bool mode: that pair answers the
 * task (n_pairs = 1, done). Contacts mode: pairs are counted up to the cap
 * (max_pairs >= 1); a pair beyond it sets truncated and ends the task, so
 * n_pairs = min(pairs found, cap). The CPU and hybrid engines give a task in
 * contacts mode with a cap of 0 no work at all (an empty result) before they
 * start; the GPU-resident engine takes the cap as 1 then (gpu.h asks for >= 1). */

/* Contacts mode: with `before` pairs found so far (on the GPU, where threads add
 * at once, the count may already be past the cap), do `added` more make a pair
 * beyond the cap? */
TDM_INLINE TDM_HD int tdm_contacts_past_cap(uint32_t before, uint32_t added, uint32_t cap)
{
    return (uint64_t)before + added > cap;
}

/* Contacts mode: the pairs a result counts of `found`. */
TDM_INLINE TDM_HD uint32_t tdm_contacts_counted(uint32_t found, uint32_t cap) { return found < cap ? found : cap; }

/* Has the result its answer? Bool: any pair; contacts: a pair beyond the cap. */
TDM_INLINE TDM_HD int tdm_result_done(const tdm_collide_result *r, tdm_mode mode)
{
    return mode == TDM_MODE_BOOL ? r->colliding != 0 : r->truncated != 0;
}

/* Adds one intersecting pair, A's leaf-order slot a_slot and B's b_slot, to r
 * (which must not be done yet); a_ids and b_ids map slots to mesh triangle
 * indices (tdm_bvh.tri_ids), read only for `first` and for pairs. pairs
 * (optional, borrowed; contacts mode) has room for cap pairs and receives the
 * counted ones in order. Returns tdm_result_done(r, mode) afterwards. */
TDM_INLINE TDM_HD int tdm_result_add(tdm_collide_result *r, tdm_mode mode, uint32_t cap, tdm_pair *pairs,
                                     const uint32_t *a_ids, uint32_t a_slot, const uint32_t *b_ids, uint32_t b_slot)
{
    if (!r->colliding) {
        r->colliding = 1;
        r->first.a_tri = a_ids[a_slot];
        r->first.b_tri = b_ids[b_slot];
    }
    if (mode == TDM_MODE_BOOL) {
        r->n_pairs = 1;
        return 1;
    }
    if (tdm_contacts_past_cap(r->n_pairs, 1, cap)) {
        r->truncated = 1;
        return 1;
    }
    if (pairs) {
        pairs[r->n_pairs].a_tri = a_ids[a_slot];
        pairs[r->n_pairs].b_tri = b_ids[b_slot];
    }
    r->n_pairs++;
    return 0;
}

/* Adds a leaf pair's intersecting pairs (mask, as tdm_leaf_intersect returns
 * it for leaves na and nb) to r in order, until r is done; r must not be done
 * yet. Returns how many of the leaf pair's triangle pairs, in order, it took:
 * up to and including the one that completed r, else all of them (the CPU
 * engine counts those as tested). */
TDM_INLINE TDM_HD uint32_t tdm_result_add_leaf(tdm_collide_result *r, tdm_mode mode, uint32_t cap, tdm_pair *pairs,
                                               uint32_t mask, const tdm_bvh_node *na, const uint32_t *a_ids,
                                               const tdm_bvh_node *nb, const uint32_t *b_ids)
{
    uint32_t fa = tdm_leaf_first(na), ca = tdm_leaf_count(na), fb = tdm_leaf_first(nb), cb = tdm_leaf_count(nb);
    for (uint32_t i = 0; i < ca; i++)
        for (uint32_t j = 0; j < cb; j++)
            if ((mask >> (2 * i + j)) & 1u && tdm_result_add(r, mode, cap, pairs, a_ids, fa + i, b_ids, fb + j))
                return i * cb + j + 1;
    return ca * cb;
}

#endif
