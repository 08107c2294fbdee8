/* OBB trees: build, layout and serialisation.
 *
 * Layout. A binary tree of 64-byte tdm_bvh_node in depth-first (pre-)order: the
 * left child of node i is i + 1 and the right child is node.link, so a descent
 * touches memory mostly forward and a subtree is one contiguous range. Leaves hold
 * one or two triangles, stored by value (9 floats each) in leaf order, so a leaf
 * test reads one contiguous run and never chases an index (a zero-area triangle
 * is stored as the segment it is, see tdm_bvh_zero_area_as_segments). The same arrays are
 * uploaded to the GPU unchanged for the hybrid engine. The GPU-resident engine
 * derives copies of the nodes at upload (geom/layout.h): always a blocked one,
 * breadth first, a node's two children adjacent in one 128-byte line, the blocks
 * its traversal loads together (gpu/gpu.h, TDM_GPU_TRAVERSE_*); and for the WIDE
 * traversal only, Damkjaer & Erleben's four-wide blocks (a node's four
 * grandchildren, with imaginary filler nodes beside leaves). The CPU engine and
 * both GPU engines thus share one build and one blob, which hold no filler
 * nodes; the derived copies are never stored.
 *
 * Build (Gottschalk et al. for the fit, Jorgensen et al. section 4.1 for the
 * top-down scheme). Fit an OBB to the node's triangles (area-weighted covariance
 * of the triangles, falling back to vertex covariance for zero-area sets, and to
 * the axis-aligned box when that is smaller); split the triangles along the box's
 * longest axis; recurse until one triangle, or two that fit together (bvh.c).
 *
 * The split point is the mean of the centroids, not the median that Jorgensen et
 * al. use for their implicit, perfectly balanced trees: our links are explicit,
 * and on the OMPL scenes the mean split needs 1.8x (Apartment, Home) to 2.8x
 * (alpha-1.5 path) fewer box tests per query. Below depth
 * TDM_BVH_MEAN_SPLIT_DEPTH the median takes over, so the depth stays bounded
 * even for adversarial meshes; each level costs O(n), so the build is O(n log n)
 * for ordinary meshes and O(n * 96) at worst. */
#ifndef TDM_GEOM_BVH_H
#define TDM_GEOM_BVH_H

#include "bv.h"
#include "mesh.h"

/* Depth bounds (root = depth 1). Nodes above TDM_BVH_MEAN_SPLIT_DEPTH split at
 * the centroid mean, deeper ones at the median, so a tree of at most 2^30
 * triangles is at most 64 + 31 deep. A deserialised blob deeper than
 * TDM_BVH_MAX_DEPTH is rejected, which bounds the traversal stacks. */
#define TDM_BVH_MEAN_SPLIT_DEPTH 64
#define TDM_BVH_MAX_DEPTH 96

/* The BVTT descent rule every engine shares (simultaneous descent, Jorgensen et
 * al.): a pair of internal nodes splits both nodes, four child pairs, as long as
 * their boxes are of similar size; when one box's squared diagonal is more than
 * TDM_DESCEND_BOTH_RATIO times the other's, only the larger is split (splitting
 * the small one too would test its children against everything the large box
 * holds). On a sphere probing a torus the guard cut box tests 15-fold against
 * unconditional four-way splitting. */
#define TDM_DESCEND_BOTH_RATIO 4.0f

/* Children of the node pair (ia, ib): writes 1 or 2 node indices of each tree
 * into ca/cb and returns nca * ncb, or 0 when both are leaves. */
TDM_INLINE TDM_HD int tdm_bvtt_children(const tdm_bvh_node *na, uint32_t ia, const tdm_bvh_node *nb, uint32_t ib,
                                        uint32_t ca[2], int *nca, uint32_t cb[2], int *ncb)
{
    int la = tdm_node_is_leaf(na), lb = tdm_node_is_leaf(nb);
    if (la && lb) return 0;
    if (!la && !lb) {
        float sa = na->extent[0] * na->extent[0] + na->extent[1] * na->extent[1] + na->extent[2] * na->extent[2];
        float sb = nb->extent[0] * nb->extent[0] + nb->extent[1] * nb->extent[1] + nb->extent[2] * nb->extent[2];
        if (sa > TDM_DESCEND_BOTH_RATIO * sb) lb = 1;      /* split only a */
        else if (sb > TDM_DESCEND_BOTH_RATIO * sa) la = 1; /* split only b */
    }
    if (la) { ca[0] = ia; *nca = 1; } else { ca[0] = ia + 1; ca[1] = (uint32_t)na->link; *nca = 2; }
    if (lb) { cb[0] = ib; *ncb = 1; } else { cb[0] = ib + 1; cb[1] = (uint32_t)nb->link; *ncb = 2; }
    return *nca * *ncb;
}

typedef struct tdm_bvh {
    uint32_t n_nodes, n_tris;
    tdm_bvh_node *nodes;  /* n_nodes, 64-byte aligned, owned */
    float *tri_verts;     /* 9 * n_tris, leaf order, owned */
    uint32_t *tri_ids;    /* n_tris: the mesh triangle index of each leaf-order slot, owned */
    float radius;         /* largest |coordinate| of any vertex (for test tolerances) */
    float *exact_extent;  /* 3 per node, owned, host only, not serialised: the node's extents measured
                             for tdm_obb_apart_exact (bv.h), every triangle below it inside
                             { p : |axis_k . (p - center)| <= exact_extent_k } exactly; NULL when the
                             tree has none (the CPU engine then never takes the exact stage) */
    void *reps;           /* owned, host only, not serialised: workpile/solid.c's representatives of the
                             tree's connected components, made on first use and kept (read and set
                             atomically: a shared tree's first scenes may ask at once); one malloc'd
                             block, freed with the tree */
} tdm_bvh;

/* Builds the tree of a validated mesh. Returns 0 or TDM_ENOMEM. The caller frees
 * it with tdm_bvh_free. The mesh is only read. */
int tdm_bvh_build(const tdm_mesh *mesh, tdm_bvh **out);
/* The same tree, node for node, built by up to `threads` threads (rounded down to a power of
 * two, at most 64; subtrees of 16Ki triangles or more split between them). 0 or TDM_ENOMEM. */
int tdm_bvh_build_threads(const tdm_mesh *mesh, int threads, tdm_bvh **out);
void tdm_bvh_free(tdm_bvh *bvh);

/* Stores every zero-area triangle as its two extreme vertices and a repeat of
 * one (the same point set), the form the triangle tests take fastest. Builds and
 * deserialisation do it; idempotent. */
void tdm_bvh_zero_area_as_segments(tdm_bvh *bvh);

/* Measures exact_extent for every node (builds and deserialisation do it):
 * each leaf's vertices projected on the axes of every node above it, in
 * double, the largest rounded up to float; O(triangles x depth). Returns 0 or
 * TDM_ENOMEM (the tree is then unchanged). */
int tdm_bvh_exact_extents(tdm_bvh *bvh);

/* Serialisation: a versioned, checksummed blob (little-endian header with magic
 * "TDMBVH", version, counts and the SHA-256 of the payload; then nodes, triangle
 * coordinates and triangle ids). *blob is malloc'd; the caller frees it. */
#define TDM_BVH_BLOB_VERSION 1u
int tdm_bvh_serialize(const tdm_bvh *bvh, void **blob, size_t *len);
/* Checks magic, version, sizes, checksum and the tree's structure (every link in
 * range and pointing forward, every leaf's triangles in range) before returning a
 * new tree: TDM_ECORRUPT, TDM_EVERSION or TDM_ENOMEM otherwise. */
int tdm_bvh_deserialize(const void *blob, size_t len, tdm_bvh **out);

#endif
