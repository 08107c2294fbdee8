/* Host entry points that run geom/ predicates on the GPU, so that tests can check
 * the device build of the shared TDM_HD code against the host build on the same
 * inputs. Every function returns 0 or a negative TDM_E* code; without a GPU (or
 * in a build without CUDA, through gpu_stub.c) they return TDM_ENODEV. */
#ifndef TDM_GPU_GEOM_H
#define TDM_GPU_GEOM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a CUDA device is usable, else 0; *why (if given) names the reason. */
int tdm_gpu_available(const char **why);

/* out[i] = tdm_tri_tri_intersect(p + 9i, q + 9i) for i < n: p and q hold n
 * triangles each as 9 doubles (three xyz vertices). */
int tdm_gpu_tri_tri_batch(const double *p, const double *q, size_t n, uint8_t *out);

#ifdef __cplusplus
}
#endif

#endif
