/* The operations endpoint: Prometheus metrics and the health probes over HTTP,
 * served by libmicrohttpd on its own thread (--metrics-listen).
 *
 *   GET /metrics  200, text/plain; version=0.0.4: tdm_metrics_render (metrics.h)
 *   GET /healthz  200 "ok" while the process runs and its event loop is
 *                 responsive (published within health-loop-timeout seconds; 200
 *                 "starting" before the loop's first heartbeat, while the data
 *                 directory loads); 503 with the heartbeat's age once it stalls
 *   GET /readyz   200 "ready" once the data directory is loaded and the listeners
 *                 accept; 503 with the reason while starting, while shutting down,
 *                 while the loop is stalled (as /healthz), and after the GPU failed
 *                 for good (a sticky CUDA error) until the restart that follows has
 *                 loaded everything again
 *
 * HEAD works for each; other paths are 404, other methods 405. The thread reads
 * only metrics.h's atomics and snapshot: it never touches the loop, the
 * catalogue or the engine, so a scrape cannot block a request, and a stuck loop
 * cannot block /healthz. */
#ifndef TDM_DAEMON_HTTP_H
#define TDM_DAEMON_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tdm_http tdm_http;

/* Binds addr (HOST:PORT or [IPV6]:PORT; port 0 takes a free one, logged) and
 * starts the thread. health_timeout_s: /healthz's bound on the heartbeat's age.
 * Returns 0, or -1 with err (*out NULL). */
int tdm_http_start(const char *addr, uint32_t health_timeout_s, tdm_http **out, char *err, size_t errlen);
/* The bound port. */
int tdm_http_port(const tdm_http *h);
/* Stops the thread (answers in progress finish) and frees. NULL is a no-op. */
void tdm_http_stop(tdm_http *h);

#endif
