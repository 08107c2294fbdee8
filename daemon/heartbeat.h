/* The loop's heartbeat: a timer on the loop thread that, every metrics-interval
 * milliseconds, publishes the gauges and the readiness of metrics.h (so GET
 * /healthz sees a loop that still runs, and /readyz what the loop knows), pings
 * systemd's watchdog when the unit sets WatchdogSec, and watches the engine for a
 * GPU that failed for good.
 *
 * A GPU failure (a sticky CUDA error poisons the context: the scheduler then runs
 * everything on the CPU engine, tdm_sched_stats.gpu_broken) makes tandemd not
 * ready at once; with exit-on-gpu-failure (the default) it then shuts down
 * gracefully, answering what is in flight on the CPU engine, and exits with
 * status 3 so that its supervisor (systemd's Restart=on-failure, a Kubernetes
 * pod's restart) starts a fresh process, whose new CUDA context loads every mesh
 * again. Readiness comes back with that process, once it has loaded everything.
 *
 * The timer is unreferenced: it never keeps the loop alive by itself. */
#ifndef TDM_DAEMON_HEARTBEAT_H
#define TDM_DAEMON_HEARTBEAT_H

#include "server.h"

/* Exit status after a GPU failure (exit-on-gpu-failure). */
#define TDM_EXIT_GPU_FAILED 3

typedef struct tdm_heartbeat tdm_heartbeat;

/* Starts the timer on srv's loop (srv borrowed: it must outlive the heartbeat).
 * 0, or a libuv error. */
int tdm_heartbeat_start(tdm_server *srv, uint32_t interval_ms, tdm_heartbeat **out);
/* Publishes now (loop thread), e.g. the moment tandemd becomes ready. */
void tdm_heartbeat_beat(tdm_heartbeat *hb);
/* Stops and closes the timer; it is freed by the loop's next run. NULL is a no-op. */
void tdm_heartbeat_stop(tdm_heartbeat *hb);

#endif
