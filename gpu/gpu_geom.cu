/* The geom/ predicates compiled by nvcc, behind gpu_geom.h. */
#include <cuda_runtime.h>

#include "../geom/tri.h"
#include "cuda_util.h"
#include "gpu_geom.h"

__global__ void tri_tri_kernel(const double *p, const double *q, size_t n, uint8_t *out)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    tdm_dvec3 a[3], b[3];
    for (int k = 0; k < 3; k++) {
        a[k] = tdm_d3(p[9 * i + 3 * k], p[9 * i + 3 * k + 1], p[9 * i + 3 * k + 2]);
        b[k] = tdm_d3(q[9 * i + 3 * k], q[9 * i + 3 * k + 1], q[9 * i + 3 * k + 2]);
    }
    out[i] = (uint8_t)tdm_tri_tri_intersect(a, b);
}

extern "C" int tdm_gpu_available(const char **why)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why) *why = tdm_cuda_no_device_why(e, n, 0);
        cudaGetLastError();
        return 0;
    }
    if (why) *why = "";
    return 1;
}

extern "C" int tdm_gpu_tri_tri_batch(const double *p, const double *q, size_t n, uint8_t *out)
{
    if (!tdm_gpu_available(NULL)) return TDM_ENODEV;
    if (n == 0) return TDM_OK;
    double *dp = NULL, *dq = NULL;
    uint8_t *dout = NULL;
    int rc = TDM_EGPU;
    size_t bytes = 9 * sizeof(double) * n;
    if (cudaMalloc(&dp, bytes) != cudaSuccess || cudaMalloc(&dq, bytes) != cudaSuccess ||
        cudaMalloc(&dout, n) != cudaSuccess) {
        rc = TDM_EGPUMEM;
        goto done;
    }
    if (cudaMemcpy(dp, p, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dq, q, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        goto done;
    tri_tri_kernel<<<(unsigned)((n + 255) / 256), 256>>>(dp, dq, n, dout);
    if (cudaGetLastError() != cudaSuccess) goto done;
    if (cudaMemcpy(out, dout, n, cudaMemcpyDeviceToHost) != cudaSuccess) goto done;
    rc = TDM_OK;
done:
    cudaFree(dp);
    cudaFree(dq);
    cudaFree(dout);
    cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
    return rc;
}
