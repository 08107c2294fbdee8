/* What the CUDA engines of gpu/ (resident.cu, hybrid.cu) share about CUDA
 * itself: how a failed call becomes a TDM_E* code, and the 16-byte loads their
 * kernels read tasks and nodes with (after NVIDIA Warp's cuda_util.h). Only .cu
 * files include it. */
#ifndef TDM_GPU_CUDA_UTIL_H
#define TDM_GPU_CUDA_UTIL_H

#include <cuda_runtime.h>

#include "../geom/bv.h"

/* An error that poisons the context (illegal address, launch failure...):
 * every later call on it fails, so the engine that saw it is dead and fails
 * fast from then on; the supervisor restarts the process. */
/* Why no device can be used, for a person: what is missing (cudaGetDeviceCount's
 * error e and count n, the configured device index). Static text. */
static inline const char *tdm_cuda_no_device_why(cudaError_t e, int n, int device)
{
    if (e == cudaErrorInsufficientDriver)
        return "no NVIDIA driver found (libcuda.so.1), or one older than this build's CUDA runtime needs";
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0))
        return "the NVIDIA driver sees no CUDA device";
    if (e != cudaSuccess) return cudaGetErrorString(e);
    if (device < 0 || device >= n) return "the configured CUDA device index is not one of this machine's devices";
    return "";
}

static inline int tdm_cuda_is_sticky(cudaError_t e)
{
    return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction ||
           e == cudaErrorMisalignedAddress || e == cudaErrorHardwareStackError || e == cudaErrorECCUncorrectable;
}

/* The TDM_E* code of a failed CUDA call e: TDM_EGPUMEM when the device is out
 * of memory, else TDM_EGPU. A sticky error sets *dead, the flag of the engine
 * that made the call (an int, or a std::atomic<int> read by other threads).
 * Clears the calling thread's last error, which a non-sticky error leaves set
 * and the next cudaGetLastError would report again. */
template <class Flag> static inline int tdm_cuda_err(cudaError_t e, Flag *dead)
{
    if (tdm_cuda_is_sticky(e)) *dead = 1;
    cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? TDM_EGPUMEM : TDM_EGPU;
}

/* Returns tdm_cuda_err's code from the enclosing function when expr (a CUDA
 * call) fails; dead as for tdm_cuda_err. Never aborts. */
#define TDM_CUDA_TRY(dead, expr)                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess) return tdm_cuda_err(e_, (dead));                                    \
    } while (0)

/* Copies n16 16-byte words from global memory src (read-only for the kernel's
 * lifetime, 16-byte aligned) to dst through the read-only cache: a task's hot
 * part and a 64-byte node are read as a few vector loads instead of many
 * scalar ones. */
static_assert(sizeof(tdm_bvh_node) == 64 && alignof(tdm_bvh_node) >= 16, "nodes are read as four float4");

__device__ static __forceinline__ void tdm_load16(void *dst, const void *src, int n16)
{
    const float4 *s = reinterpret_cast<const float4 *>(src);
    float4 *d = reinterpret_cast<float4 *>(dst);
    for (int k = 0; k < n16; k++) d[k] = __ldg(s + k);
}

#endif
