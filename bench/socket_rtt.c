/* What a round trip over a Unix socket costs on this machine, with nothing else in it: the
 * floor under every request a planner sends tandemd (bench/results/ompl_resident.md, section 9).
 * P client threads, each with its own echo thread on a socketpair, send a 64-byte message and
 * wait for it back, as libtandem's sync client waits (poll, then recv), for `seconds`; then the
 * same with the echo side spinning `work_us` before it answers (a request's work).
 *
 *   bench_socket_rtt [--pairs P,P...] [--seconds S] [--work-us W]
 *
 * Prints one Markdown table row per pair count: pairs, round trips, round trips/s, the median,
 * 10th and 90th percentile in microseconds. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64
#define MAX_SAMPLES (1u << 20)

typedef struct pair {
    int fd[2];
    double seconds, work_us;
    uint32_t *us; /* samples, in microseconds */
    size_t n;
} pair;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int read_full(int fd, char *b, size_t n, int use_poll)
{
    size_t got = 0;
    while (got < n) {
        if (use_poll) {
            struct pollfd pf = {fd, POLLIN, 0};
            if (poll(&pf, 1, -1) < 0 && errno != EINTR) return -1;
        }
        ssize_t r = recv(fd, b + got, n - got, 0);
        if (r > 0) got += (size_t)r;
        else if (r == 0) return -1;
        else if (errno != EINTR && errno != EAGAIN) return -1;
    }
    return 0;
}

static void *echo(void *arg)
{
    pair *p = arg;
    char b[MSG];
    while (read_full(p->fd[1], b, MSG, 0) == 0) {
        if (p->work_us > 0)
            for (double end = now_s() + p->work_us * 1e-6; now_s() < end;) {
            }
        if (send(p->fd[1], b, MSG, MSG_NOSIGNAL) != MSG) break;
    }
    return NULL;
}

static void *client(void *arg)
{
    pair *p = arg;
    char b[MSG];
    memset(b, 7, sizeof b);
    double end = now_s() + p->seconds;
    while (p->n < MAX_SAMPLES) {
        double t0 = now_s();
        if (t0 >= end) break;
        if (send(p->fd[0], b, MSG, MSG_NOSIGNAL) != MSG || read_full(p->fd[0], b, MSG, 1) != 0) break;
        p->us[p->n++] = (uint32_t)((now_s() - t0) * 1e6 + 0.5);
    }
    shutdown(p->fd[0], SHUT_RDWR);
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int run(int n_pairs, double seconds, double work_us)
{
    pair *ps = calloc((size_t)n_pairs, sizeof *ps);
    pthread_t *th = calloc(2 * (size_t)n_pairs, sizeof *th);
    if (!ps || !th) return 1;
    for (int i = 0; i < n_pairs; i++) {
        ps[i].seconds = seconds;
        ps[i].work_us = work_us;
        ps[i].us = malloc(MAX_SAMPLES * sizeof(uint32_t));
        if (!ps[i].us || socketpair(AF_UNIX, SOCK_STREAM, 0, ps[i].fd) != 0) {
            perror("bench_socket_rtt");
            return 1;
        }
    }
    for (int i = 0; i < n_pairs; i++) {
        pthread_create(&th[2 * i], NULL, echo, &ps[i]);
        pthread_create(&th[2 * i + 1], NULL, client, &ps[i]);
    }
    for (int i = 0; i < 2 * n_pairs; i++) pthread_join(th[i], NULL);
    size_t total = 0;
    for (int i = 0; i < n_pairs; i++) total += ps[i].n;
    uint32_t *all = malloc((total ? total : 1) * sizeof *all);
    if (!all) return 1;
    size_t at = 0;
    for (int i = 0; i < n_pairs; i++) {
        memcpy(all + at, ps[i].us, ps[i].n * sizeof *all);
        at += ps[i].n;
        close(ps[i].fd[0]);
        close(ps[i].fd[1]);
        free(ps[i].us);
    }
    qsort(all, total, sizeof *all, cmp_u32);
    if (total)
        printf("| %d | %.0f | %zu | %.0f | %u | %u | %u |\n", n_pairs, work_us, total, (double)total / seconds,
               all[total / 2], all[total / 10], all[total * 9 / 10]);
    fflush(stdout);
    free(all);
    free(ps);
    free(th);
    return 0;
}

int main(int argc, char **argv)
{
    const char *pairs = "1,16,64";
    double seconds = 2, work_us = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--pairs") && v) pairs = v, i++;
        else if (!strcmp(a, "--seconds") && v) seconds = atof(v), i++;
        else if (!strcmp(a, "--work-us") && v) work_us = atof(v), i++;
        else {
            fprintf(stderr, "usage: bench_socket_rtt [--pairs P,P...] [--seconds S] [--work-us W]\n");
            return 2;
        }
    }
    if (seconds <= 0 || work_us < 0) {
        fprintf(stderr, "bench_socket_rtt: --seconds must be > 0 and --work-us >= 0\n");
        return 2;
    }
    printf("| pairs | work us | round trips | round trips/s | median us | p10 us | p90 us |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const char *p = pairs; *p;) {
        int n = atoi(p);
        if (n < 1 || n > 4096) {
            fprintf(stderr, "bench_socket_rtt: pair counts are 1 to 4096\n");
            return 2;
        }
        if (run(n, seconds, work_us)) return 1;
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }
    return 0;
}
