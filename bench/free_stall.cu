/* Does freeing device memory stall the other threads' device work? (tandemd frees a tree's arrays
 * with cudaFree when a mesh or a robot scene's world leaves; call 123 timed those frees at ~1 ms on
 * average and up to 8 ms, against the express ring's resident launches.)
 *
 *   bench_free_stall [SECONDS] [FREE_BYTES] [FREE_EVERY_MS]
 *
 * Three threads on one device, as in tandemd under load:
 * - a "lane" thread runs small dependent launches (a tiny kernel, a copy back, a wait), as a
 *   pooled run's steps, and records each round trip;
 * - a "ring" thread keeps a resident kernel running, launches of 2 ms chained on two streams, as the
 *   express ring does while requests come;
 * - a "writer" thread, in the second half of the phases only, allocates FREE_BYTES with cudaMalloc
 *   and frees them with cudaFree every FREE_EVERY_MS, timing each call.
 * Phases alternate (no writer, writer, no writer, writer), SECONDS each (default 2); per phase the
 * lane's round trips (count, median, 99th percentile, largest, in microseconds) and the writer's
 * cudaMalloc and cudaFree times. A stall shows as the lane's largest round trip growing to the free's
 * time while the writer runs. Needs a GPU; prints a reason and exits 0 without one. */
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

static double now_us()
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

__global__ void tiny_kernel(unsigned *x) { x[threadIdx.x] += 1u; }

/* a resident launch: spins for `ns` nanoseconds of the device's clock, one block a SM's worth */
__global__ void resident_kernel(unsigned long long ns, unsigned *sink)
{
    unsigned long long t0 = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    unsigned v = 0;
    while (t - t0 < ns) {
        v += (unsigned)t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    }
    if (v == 0xffffffffu) sink[blockIdx.x] = v;
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "bench_free_stall: %s: %s\n", #x, cudaGetErrorString(e_));             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

struct stats {
    size_t n;
    double med, p99, max;
};

static stats summary(std::vector<double> v)
{
    stats s = {v.size(), 0, 0, 0};
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.med = v[v.size() / 2];
    s.p99 = v[std::min(v.size() - 1, (size_t)(0.99 * (double)v.size()))];
    s.max = v.back();
    return s;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    size_t free_bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (size_t)4 << 20;
    double every_ms = argc > 3 ? atof(argv[3]) : 5.0;
    if (!(seconds > 0) || !free_bytes || !(every_ms > 0)) {
        fprintf(stderr, "usage: bench_free_stall [SECONDS>0] [FREE_BYTES>0] [FREE_EVERY_MS>0]\n");
        return 2;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("bench_free_stall: skipped: no CUDA device\n");
        return 0;
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs; phases of %.1f s; writer: cudaMalloc + cudaFree of %zu bytes every %.1f ms\n",
           prop.name, prop.multiProcessorCount, seconds, free_bytes, every_ms);

    std::atomic<int> phase(0), stop(0);
    /* the ring: 16 resident blocks, launches of 2 ms on two streams, each launched when the other starts */
    std::thread ring([&]() {
        CHECK(cudaSetDevice(0));
        cudaStream_t st[2];
        unsigned *sink;
        CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
        for (auto &s : st) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        int k = 0;
        while (!stop.load()) {
            resident_kernel<<<16, 128, 0, st[k]>>>(2000000ull, sink);
            CHECK(cudaGetLastError());
            k ^= 1;
            CHECK(cudaStreamSynchronize(st[k])); /* the other launch has ended: launch the next */
        }
        for (auto &s : st) CHECK(cudaStreamSynchronize(s));
        cudaFree(sink);
    });
    /* the writer */
    std::vector<double> mallocs[4], frees[4];
    std::thread writer([&]() {
        CHECK(cudaSetDevice(0));
        while (!stop.load()) {
            int p = phase.load();
            if (p % 2 == 1) {
                void *m = NULL;
                double t0 = now_us();
                CHECK(cudaMalloc(&m, free_bytes));
                double t1 = now_us();
                CHECK(cudaFree(m));
                double t2 = now_us();
                mallocs[p].push_back(t1 - t0);
                frees[p].push_back(t2 - t1);
            }
            std::this_thread::sleep_for(std::chrono::microseconds((long)(every_ms * 1000)));
        }
    });
    /* the lane, on this thread */
    CHECK(cudaSetDevice(0));
    cudaStream_t ls;
    CHECK(cudaStreamCreateWithFlags(&ls, cudaStreamNonBlocking));
    unsigned *d, *h;
    CHECK(cudaMalloc(&d, 256 * sizeof(unsigned)));
    CHECK(cudaMallocHost(&h, 256 * sizeof(unsigned)));
    CHECK(cudaMemset(d, 0, 256 * sizeof(unsigned)));
    std::vector<double> trips[4];
    for (int p = 0; p < 4; p++) {
        phase.store(p);
        double end = now_us() + seconds * 1e6;
        while (now_us() < end) {
            double t0 = now_us();
            for (int i = 0; i < 4; i++) tiny_kernel<<<1, 256, 0, ls>>>(d);
            CHECK(cudaMemcpyAsync(h, d, 256 * sizeof(unsigned), cudaMemcpyDeviceToHost, ls));
            CHECK(cudaStreamSynchronize(ls));
            trips[p].push_back(now_us() - t0);
        }
    }
    stop.store(1);
    writer.join();
    ring.join();
    for (int p = 0; p < 4; p++) {
        stats t = summary(trips[p]), m = summary(mallocs[p]), f = summary(frees[p]);
        printf("phase %d (%s): lane round trips %zu, median %.1f us, p99 %.1f, max %.1f", p,
               p % 2 ? "writer allocating and freeing" : "no writer", t.n, t.med, t.p99, t.max);
        if (p % 2) printf("; cudaMalloc %zu, median %.1f us, max %.1f; cudaFree median %.1f us, max %.1f", m.n, m.med,
                          m.max, f.med, f.max);
        printf("\n");
    }
    return 0;
}
