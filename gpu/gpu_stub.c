/* gpu_geom.h for builds without CUDA: there is no GPU to run on. */
#include "../geom/base.h"
#include "gpu_geom.h"

int tdm_gpu_available(const char **why)
{
    if (why) *why = "this build has no CUDA support (configured with TANDEM_CUDA=OFF or no nvcc)";
    return 0;
}

int tdm_gpu_tri_tri_batch(const double *p, const double *q, size_t n, uint8_t *out)
{
    (void)p; (void)q; (void)n; (void)out;
    return TDM_ENODEV;
}
