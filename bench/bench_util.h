/* What the loopback load generators (bench_server.c, bench_robot_server.c) share: a
 * monotonic clock, `--name value` arguments, and sorting latencies. Header only. */
#ifndef TDM_BENCH_BENCH_UTIL_H
#define TDM_BENCH_BENCH_UTIL_H

#include <string.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The value after the argument `name`, or def when it is absent. */
static inline const char *bench_arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return def;
}

/* qsort's comparison of doubles, increasing. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
