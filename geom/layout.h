/* Node layouts derived from a built tree for the GPU-resident engine's
 * traversals (gpu/gpu.h, TDM_GPU_TRAVERSE_*). The tree itself (bvh.h) stays in
 * depth-first order, left child next, for the CPU engine, the hybrid engine and
 * the blob; these copies are made on the host at upload and never stored.
 *
 * Both hold the tree's nodes unchanged but for their link (boxes, axes and
 * extents bit for bit), leaves included: a leaf keeps its triangle range, so the
 * leaf-order triangle arrays serve every layout. Both put the root at node 0.
 *
 * Blocked (TDM_GPU_TRAVERSE_PAIRS and _BLOCKS): breadth first, an internal
 * node's two children adjacent at link and link + 1, link even; node 1 is
 * unused (zeroed), so that with the array 128-byte aligned two siblings share
 * one 128-byte line, the block a warp's loads fetch once for every thread that
 * reads either.
 *
 * Four-wide (TDM_GPU_TRAVERSE_WIDE), after Damkjaer and Erleben: an internal
 * node's link is the first of a block of four consecutive nodes (256 bytes, the
 * index a multiple of four) holding its binary grandchildren, two per child
 * (that child's left then right child), children in order (left child's two
 * first); a child that is a leaf stands in for its two, as the leaf itself
 * followed by an imaginary node. Nodes 1..3 are imaginary (the root's block
 * has one node). So the internal nodes at odd binary depths (the root at depth
 * 0) do not appear (their boxes are not tested), every other node of the tree
 * appears exactly once, and a traversal descends two binary levels per step.
 *
 * An imaginary node is all zero but for extent (-1, -1, -1) and link -1 (a
 * leaf, so nothing is below it); a built tree's extents are never negative,
 * which is how tdm_wide_imaginary tells them apart. Traversals skip it (it
 * stands for no box). */
#ifndef TDM_GEOM_LAYOUT_H
#define TDM_GEOM_LAYOUT_H

#include "bvh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nodes of the blocked layout of a tree of n nodes: the tree's, and the unused
 * node 1. */
#define TDM_LAYOUT_BLOCKED_NODES(n) ((n) + 1)

/* Is n an imaginary node of the four-wide layout (never one of the tree's)? */
TDM_INLINE TDM_HD int tdm_wide_imaginary(const tdm_bvh_node *n) { return n->extent[0] < 0.0f; }

/* The blocked layout of bvh (only read): *out gets a malloc'd array of
 * *count = TDM_LAYOUT_BLOCKED_NODES(bvh->n_nodes) nodes, which the caller frees
 * with free(). Returns 0, TDM_EEMPTY for a tree of no nodes, or TDM_ENOMEM;
 * *out is NULL and *count 0 on failure. Any thread. */
int tdm_layout_blocked(const tdm_bvh *bvh, tdm_bvh_node **out, uint32_t *count);

/* The four-wide layout of bvh (only read): *out gets a malloc'd array of
 * *count nodes, 4 * (1 + the internal nodes at even binary depths), at most
 * 4 + 4 * bvh->n_nodes; the caller frees it with free(). Returns as
 * tdm_layout_blocked. */
int tdm_layout_wide(const tdm_bvh *bvh, tdm_bvh_node **out, uint32_t *count);

#ifdef __cplusplus
}
#endif

#endif
