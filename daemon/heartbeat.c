#include "heartbeat.h"

#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "metrics.h"

struct tdm_heartbeat {
    uv_timer_t timer; /* first: the close callback casts back */
    tdm_server *srv;
    int gpu_failed;   /* seen and acted on */
    int watchdog;     /* systemd's watchdog is on (WATCHDOG_USEC for this process) */
};

static void gpu_failed(tdm_heartbeat *hb)
{
    tdm_server *srv = hb->srv;
    hb->gpu_failed = 1;
    if (!srv->cfg->exit_on_gpu_failure) {
        tdm_log_error("the GPU failed for good (a sticky CUDA error): queries run on the CPU engine; not ready until "
                      "tandemd is restarted (exit-on-gpu-failure is off)");
        sd_notify(0, "STATUS=GPU failed: running on the CPU engine until restarted");
        return;
    }
    tdm_log_error("the GPU failed for good (a sticky CUDA error): shutting down to be restarted with a fresh CUDA "
                  "context (exit status %d); what is in flight is answered on the CPU engine",
                  TDM_EXIT_GPU_FAILED);
    sd_notify(0, "STATUS=GPU failed: restarting");
    srv->exit_status = TDM_EXIT_GPU_FAILED;
    tdm_server_shutdown(srv, 0);
}

static void beat(tdm_heartbeat *hb)
{
    tdm_server *srv = hb->srv;
    tdm_metrics_snapshot s = {0};
    s.conns_open = srv->n_active;
    s.conns_unauthenticated = srv->n_unauth;
    s.conns_ring = srv->n_rings;
    s.conns_ring_parked = __atomic_load_n(&srv->n_rings_parked, __ATOMIC_RELAXED);
    s.ring_bytes = __atomic_load_n(&srv->mem.used[TDM_MEM_RING], __ATOMIC_RELAXED);
    if (srv->catalog) {
        s.meshes = tdm_catalog_n_meshes(srv->catalog);
        s.scenes = tdm_catalog_n_scenes(srv->catalog);
        s.scenes_ephemeral = tdm_catalog_n_ephemeral_scenes(srv->catalog);
        s.robots = tdm_catalog_n_robots(srv->catalog);
        s.meshes_bytes = tdm_catalog_bytes(srv->catalog);
    }
    s.pooler_jobs = srv->query_pool ? tdm_query_pool_pending(srv->query_pool) : 0;
    s.pooler_owners = srv->query_pool ? tdm_query_pool_owners_waiting(srv->query_pool) : 0;
    s.writer_ops = srv->writer ? tdm_writer_pending(srv->writer) : 0;
    s.upload_bytes = srv->upload_bytes;
    s.queries = __atomic_load_n(&srv->counters.queries, __ATOMIC_RELAXED);
    if (srv->engine) {
        s.backend = tdm_sched_backend(srv->engine);
        s.lanes = tdm_sched_lanes(srv->engine);
        tdm_sched_get_stats(srv->engine, &s.engine);
    }
    if (s.engine.gpu_broken && !hb->gpu_failed) gpu_failed(hb);
    if (s.engine.gpu_broken)
        s.not_ready = "the GPU failed (a sticky CUDA error); waiting for the restart that reloads everything";
    else if (srv->shutting_down)
        s.not_ready = "shutting down";
    else if (!srv->ready)
        s.not_ready = "starting: loading the data directory";
    s.ready = s.not_ready == NULL;
    tdm_metrics_publish(&s, uv_hrtime());
    if (hb->watchdog) sd_notify(0, "WATCHDOG=1");
}

static void locked_beat(tdm_heartbeat *hb)
{
    tdm_srv_lock(hb->srv);
    beat(hb);
    tdm_srv_unlock(hb->srv);
}

static void on_timer(uv_timer_t *t) { locked_beat((tdm_heartbeat *)t); }

int tdm_heartbeat_start(tdm_server *srv, uint32_t interval_ms, tdm_heartbeat **out)
{
    *out = NULL;
    tdm_heartbeat *hb = calloc(1, sizeof *hb);
    if (!hb) return UV_ENOMEM;
    hb->srv = srv;
    int rc = uv_timer_init(srv->loop, &hb->timer);
    if (rc != 0) {
        free(hb);
        return rc;
    }
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0) {
        hb->watchdog = 1;
        if ((uint64_t)interval_ms * 1000 * 2 > usec)
            tdm_log_warn("systemd's watchdog expects a ping every %llu ms; metrics-interval is %u ms: make WatchdogSec "
                         "at least twice metrics-interval",
                         (unsigned long long)(usec / 1000), interval_ms);
    }
    uv_timer_start(&hb->timer, on_timer, interval_ms, interval_ms);
    uv_unref((uv_handle_t *)&hb->timer);
    *out = hb;
    return 0;
}

void tdm_heartbeat_beat(tdm_heartbeat *hb)
{
    if (hb) locked_beat(hb);
}

static void on_closed(uv_handle_t *h) { free(h); }

void tdm_heartbeat_stop(tdm_heartbeat *hb)
{
    if (!hb) return;
    uv_close((uv_handle_t *)&hb->timer, on_closed);
}
