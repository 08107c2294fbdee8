/* Shared definitions for geometry compiled by both the host C compiler and nvcc.
 *
 * Everything in geom/ that runs on both sides is `static inline TDM_HD`, so the CPU
 * engine and the CUDA kernels call literally the same code (NVIDIA Warp's bvh.h does
 * the same). No I/O and no allocation happens in these headers. */
#ifndef TDM_GEOM_BASE_H
#define TDM_GEOM_BASE_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define TDM_HD __host__ __device__
#define TDM_ALIGN(n) __align__(n)
#elif defined(__cplusplus)
#define TDM_HD
#define TDM_ALIGN(n) alignas(n)
#else
#define TDM_HD
#define TDM_ALIGN(n) _Alignas(n)
#endif

#define TDM_INLINE static inline

/* A body shared by variants that differ in a constant argument (geom/bv.h's box
 * test with and without its margin): inlined wherever it is called, so that the
 * constant folds away and the variant without it is the test it always was. */
#if defined(__CUDACC__)
#define TDM_ALWAYS_INLINE static __forceinline__
#elif defined(__GNUC__)
#define TDM_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define TDM_ALWAYS_INLINE static inline
#endif

/* For rarely taken slow paths (the exact arithmetic behind the predicates):
 * keeping them out of line keeps kernels small and nvcc's compile time sane. */
#if defined(__CUDACC__)
#define TDM_COLD static __noinline__
#elif defined(__GNUC__)
#define TDM_COLD static __attribute__((noinline, cold))
#else
#define TDM_COLD static
#endif

/* Error codes shared by every module: 0 is success, failures are negative. Keep
 * tdm_strerror() (geom/error.c) in sync; the list ends in TDM_E__LAST. */
enum tdm_err {
    TDM_OK = 0,
    TDM_EINVAL = -1,     /* an argument is malformed */
    TDM_ENOMEM = -2,     /* host allocation failed */
    TDM_ERANGE = -3,     /* a value is outside its documented limit */
    TDM_ENONFINITE = -4, /* NaN or Inf where a finite number is required */
    TDM_EINDEX = -5,     /* an index points outside its array */
    TDM_EEMPTY = -6,     /* a mesh or batch has no elements */
    TDM_ECORRUPT = -7,   /* a serialised blob fails its checksum or structure check */
    TDM_EVERSION = -8,   /* a serialised blob has a version this build cannot read */
    TDM_EIO = -9,        /* a file could not be read or written */
    TDM_EFORMAT = -10,   /* a text or mesh file could not be parsed */
    TDM_ESYS = -11,      /* an operating-system call failed (threads, clocks) */
    TDM_ENODEV = -12,    /* no usable GPU (none present, or the build has no CUDA) */
    TDM_EGPU = -13,      /* a CUDA call failed */
    TDM_EGPUMEM = -14,   /* device memory exhausted or over its budget */
    TDM_ECANCELED = -15, /* a run given up: a task names a tree without the device copy the engine needs;
                            or work stopped because its requester went away */
    TDM_EBUDGET = -16,   /* work stopped at its budget of box and triangle tests (tdm_work) */
    TDM_EAGAIN = -17,    /* no room now (the GPU's express ring): nothing was done, try another way */
    TDM_E__LAST = -18
};

const char *tdm_strerror(int err);

/* The float nearest to v that is not below it (v finite): (float)v, or the next float up when the
 * conversion rounded down; nextafterf's value, without its library call (a tenth of a large tree's
 * build went to it). Host only. */
TDM_INLINE float tdm_float_up(double v)
{
    float f = (float)v;
    if (!((double)f < v)) return f;
    if (f == 0) return FLT_TRUE_MIN;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u & 0x80000000u) ? u - 1 : u + 1; /* toward +infinity: a negative float's magnitude falls */
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
