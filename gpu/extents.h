/* First-fit extents of one allocation made once (the express ring's program arena: gpu/configs.cu).
 *
 * A persistent kernel may read only memory that was allocated before it was launched: memory
 * from cudaMallocAsync or a stream-ordered pool is valid only between the allocation's and the
 * free's positions in stream order, which a launch already running is not in; cudaMalloc and
 * cudaFree wait for the device. So the ring takes one cudaMalloc at its start and places its
 * programs in it with these extents, host-side bookkeeping only: offsets and lengths, no device
 * memory touched. Not thread-safe (the caller's lock). */
#ifndef TANDEM_GPU_EXTENTS_H
#define TANDEM_GPU_EXTENTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXTENTS_ALIGN 256u /* every offset and length is a multiple of this */

typedef struct tdm_extents {
    size_t total;            /* bytes managed (a multiple of TDM_EXTENTS_ALIGN) */
    size_t free_bytes;       /* bytes in the free extents */
    struct tdm_extent {
        size_t off, len;
    } *free;                 /* the free extents, by offset, none adjacent to another */
    size_t n_free, cap_free;
} tdm_extents;

/* total bytes (rounded down to TDM_EXTENTS_ALIGN), all free. 0, TDM_EINVAL (fewer than
 * TDM_EXTENTS_ALIGN bytes) or TDM_ENOMEM. */
int tdm_extents_init(tdm_extents *x, size_t total);
void tdm_extents_destroy(tdm_extents *x);

/* The length an allocation of `bytes` takes (rounded up to TDM_EXTENTS_ALIGN); 0 when bytes is 0
 * or the rounding overflows. */
size_t tdm_extents_length(size_t bytes);

/* The lowest free offset with room for `bytes` (that much of its extent taken), or SIZE_MAX
 * with nothing changed (bytes 0, or no free extent long enough). */
size_t tdm_extents_alloc(tdm_extents *x, size_t bytes);

/* Gives back what tdm_extents_alloc(x, bytes) returned at off. 0; TDM_EINVAL with nothing
 * changed (off not aligned, the range past the end, or any of it already free); TDM_ENOMEM
 * (no host memory for one more free extent: the range stays taken). */
int tdm_extents_free(tdm_extents *x, size_t off, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
