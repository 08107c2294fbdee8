/* What the CUDA sources of gpu/ share and the rest of the project does not see:
 * the device copy of a tree, and the budget accounting of device memory that
 * the GPU-resident and hybrid engines draw on together. */
#ifndef TDM_GPU_INTERNAL_H
#define TDM_GPU_INTERNAL_H

#include "gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tdm_gpu_mesh {
    tdm_bvh_node *nodes; /* device: n_nodes, the host tree's layout (the hybrid engine's) */
    tdm_bvh_node *blocked; /* device: the same nodes breadth first, siblings adjacent (the resident engine's) */
    tdm_bvh_node *wide;  /* device: the four-wide blocked hierarchy (TDM_GPU_TRAVERSE_WIDE only), else NULL */
    float *tris;         /* device: 9 * n_tris, leaf order */
    uint32_t *ids;       /* device: n_tris mesh triangle indices */
    uint32_t n_nodes, n_tris;
    float radius;
    uint64_t bytes;
    int pooled;          /* its arrays came from the stream-ordered allocator (tdm_gpu.mesh_pooled) */
    struct mesh_chunk *chunk; /* its arrays are one extent of this chunk of the tree arena (resident.cu), */
    size_t at;                /* at this offset, `bytes` long; NULL: an allocation each */
};

/* The CUDA device index the engine runs on (callers set it on their thread). */
int tdm_gpu_device(const tdm_gpu *g);

/* Takes `bytes` of scratch out of the memory budget (TDM_EGPUMEM if that would
 * exceed it; nothing is taken then), or gives them back with a negative count.
 * Only the thread running the engines calls it. */
int tdm_gpu_account(tdm_gpu *g, int64_t bytes);

#ifdef __cplusplus
}
#endif

#endif
