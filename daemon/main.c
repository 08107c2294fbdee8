/* tandemd: flags and config, startup, the loop, shutdown.
 *
 * daemon/README.md says which file holds what, and walks one Query from the
 * socket to tdm_sched_run and back. In short: conn.c frames it, request.c
 * routes it, request_query.c validates it and converts its poses, query_pool.c
 * hands it to the pooler (workpile/pooler.h), whose thread runs it with every
 * other query waiting in one tdm_sched_run and packs its reply; the loop sends
 * it. Meshes and scenes live in the catalogue (catalog.c), their files in the
 * data directory (datadir.c), written by the writer thread (writer.c) and read
 * back at start-up (loader.c). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "heartbeat.h"
#include "http.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "request.h"
#include "server.h"
#include "stats.h"
#include "tls.h"

/* --cpu-latency-us: holds the host's CPU latency limit (PM QoS) at `us` for as long as the
 * returned descriptor stays open (the kernel drops the request when it is closed, also when
 * tandemd dies). The file is /dev/cpu_dma_latency ($TDM_CPU_LATENCY_FILE in tests). -1, with
 * the reason in err, when it cannot be held. */
static int hold_cpu_latency(int us, char *err, size_t errlen)
{
    const char *path = getenv("TDM_CPU_LATENCY_FILE");
    if (!path || !*path) path = "/dev/cpu_dma_latency";
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cpu-latency-us: %s: %s (it needs write access: root, or a udev rule for "
                 "tandemd's group; or leave cpu-latency-us off)", path, strerror(errno));
        return -1;
    }
    int32_t v = us;
    if (write(fd, &v, sizeof v) != (ssize_t)sizeof v) {
        snprintf(err, errlen, "cpu-latency-us: writing %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    tdm_config cfg;
    char err[1024];
    int rc = tdm_config_load(&cfg, argc, argv, err, sizeof err);
    if (rc != 0) {
        if (rc < 0) fprintf(stderr, "tandemd: %s\n", err);
        tdm_config_free(&cfg);
        return rc < 0 ? 2 : 0;
    }
    tdm_log_set_level((tdm_log_level)cfg.log_level);
    /* libuv's pool (read at its first use) converts large queries' poses, builds robot scenes and
       decodes and hashes large uploads: 8 threads unless UV_THREADPOOL_SIZE says otherwise, so that
       a few tenants' large uploads leave room for the planners' scene builds (libuv's default is 4) */
    setenv("UV_THREADPOOL_SIZE", "8", 0);
    signal(SIGPIPE, SIG_IGN); /* a client that goes away is an EPIPE, not a death */
    /* Query jobs (~180 KB for 1024 poses: their transforms, results and the numbers sent)
     * and reply frames come and go thousands of times a second. Past glibc's mmap
     * threshold each would be a fresh mapping whose pages fault in on first touch (~8 %
     * of the daemon's time in a profile); keep them on the heap, and keep up to 256 MB of
     * freed heap for the next ones rather than handing it back at every free. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    tdm_log_info("tandemd %s starting (pid %ld, data dir %s)", TDM_VERSION, (long)getpid(), cfg.data_dir);
    tdm_config_log(&cfg);
    tdm_log_info("limits: frame %u B, mesh %u vertices / %u triangles, scene %u objects, %u queries per request, "
                 "%u contacts, %u pipelined, %u connections, %llu B of meshes; threads %d",
                 cfg.max_frame_bytes, cfg.max_vertices, cfg.max_triangles, cfg.max_objects, cfg.max_queries,
                 cfg.max_contacts, cfg.max_pipelined, cfg.max_connections, (unsigned long long)cfg.max_meshes_bytes,
                 cfg.threads);

    int status = 1, latency_fd = -1; /* latency_fd: --cpu-latency-us's hold */
    uv_loop_t loop;
    tdm_server srv;
    tdm_http *http = NULL;
    tdm_heartbeat *heartbeat = NULL;
    tdm_metrics_init(cfg.engine);
    /* the probes answer from the start: /healthz "starting", /readyz not ready while the data loads */
    if (cfg.metrics_listen[0] && tdm_http_start(cfg.metrics_listen, cfg.health_loop_timeout, &http, err, sizeof err)) {
        tdm_log_error("%s", err);
        tdm_config_free(&cfg);
        return 1;
    }
    memset(&srv, 0, sizeof srv);
    srv.cfg = &cfg;
    if ((rc = tdm_srv_lock_init(&srv)) != 0) {
        tdm_log_error("server lock: %s", strerror(rc));
        tdm_http_stop(http);
        tdm_config_free(&cfg);
        return 1;
    }
    srv.started_ns = uv_hrtime();
    if ((rc = uv_loop_init(&loop)) != 0) {
        tdm_log_error("event loop: %s", uv_strerror(rc));
        tdm_http_stop(http);
        tdm_config_free(&cfg);
        return 1;
    }
    srv.loop = &loop;
    if ((rc = tdm_heartbeat_start(&srv, cfg.metrics_interval, &heartbeat)) != 0) {
        tdm_log_error("heartbeat timer: %s", uv_strerror(rc));
        goto out;
    }

    if (cfg.cpu_latency_us >= 0) {
        if ((latency_fd = hold_cpu_latency(cfg.cpu_latency_us, err, sizeof err)) < 0) {
            tdm_log_error("%s", err);
            goto out;
        }
        tdm_log_info("cpu-latency-us: the host's CPU wake-up latency held at %d us while tandemd runs",
                     cfg.cpu_latency_us);
    }

    tdm_sched_config ec = tdm_sched_config_default();
    /* config.c accepts only the names these parse */
    if (tdm_backend_parse(cfg.engine, &ec.kind) != TDM_OK) ec.kind = TDM_BACKEND_AUTO;
    ec.threads = cfg.threads;
    ec.chunk_tasks = cfg.max_batch_tasks;
    ec.gpu_device = cfg.gpu_device;
    /* config.c has checked the list (and that it does not come with gpu-device) */
    if (tdm_sched_devices_parse(cfg.gpu_devices, ec.gpu_devices, &ec.n_gpu_devices, NULL, 0) != TDM_OK)
        ec.n_gpu_devices = 0;
    ec.gpu_memory = cfg.gpu_memory;
    ec.gpu_streams = cfg.gpu_streams;
    ec.gpu_program_cache = cfg.gpu_program_cache;
    ec.calibrate = cfg.engine_calibrate;
    ec.lanes = cfg.engine_lanes;
    ec.host_lanes = cfg.host_configs ? cfg.host_lanes : 0;
    if (tdm_traversal_parse(cfg.gpu_traversal, &ec.gpu_traversal) != TDM_OK) ec.gpu_traversal = TDM_TRAVERSAL_PAIRS;
    char why[256] = "";
    if ((rc = tdm_sched_create(&ec, &srv.engine, why, sizeof why)) != TDM_OK) {
        if (rc == TDM_ENODEV)
            tdm_log_error("engine %s: %s; start with --engine auto (or cpu) to run on the CPU engine", cfg.engine,
                          why[0] ? why : "no usable GPU");
        else
            tdm_log_error("engine %s: %s", cfg.engine, why[0] ? why : tdm_strerror(rc));
        goto out;
    }
    tdm_log_info("engine: %s", tdm_sched_detail(srv.engine));
    if (tdm_sched_backend(srv.engine) == TDM_BACKEND_CPU && ec.kind == TDM_BACKEND_AUTO)
        tdm_log_info("engine auto: no usable GPU in this build or machine (see above), queries run on the CPU engine");

    if (!(srv.tenants = tdm_tenants_new()) ||
        !(srv.auth_limit = tdm_auth_limit_new(cfg.auth_fail_max, cfg.auth_fail_window, cfg.auth_fail_block,
                                              cfg.auth_fail_addresses))) {
        tdm_log_error("out of memory");
        goto out;
    }
    if (cfg.tenants_file[0]) {
        if (tdm_tenants_load_file(srv.tenants, cfg.tenants_file, TDM_AUTH_TOKEN_MIN, err, sizeof err) != 0) {
            tdm_log_error("%s", err);
            goto out;
        }
        tdm_log_info("tenants read from %s", cfg.tenants_file);
    }
    srv.share_by = !strcmp(cfg.share_by, "off")          ? TDM_SHARE_OFF
                   : !strcmp(cfg.share_by, "connection") ? TDM_SHARE_CONNECTION
                   : !strcmp(cfg.share_by, "tenant")     ? TDM_SHARE_TENANT
                   : cfg.tenants_file[0]                 ? TDM_SHARE_TENANT
                                                         : TDM_SHARE_CONNECTION;
    if (tdm_datadir_open(cfg.data_dir, &srv.datadir, err, sizeof err) != 0) {
        tdm_log_error("%s", err);
        goto out;
    }
    if (!(srv.catalog = tdm_catalog_new())) {
        tdm_log_error("out of memory");
        goto out;
    }
    if ((rc = tdm_writer_create(&loop, tdm_srv_lock_cb, tdm_srv_unlock_cb, &srv, srv.datadir, srv.catalog, srv.engine, &srv.writer)) != TDM_OK) {
        tdm_log_error("storage thread: %s", tdm_strerror(rc));
        goto out;
    }
    {
        long quarter = sysconf(_SC_NPROCESSORS_ONLN) / 4; /* auto: a quarter of the cores, 1 to 8 */
        int bt = cfg.build_threads >= 1 ? cfg.build_threads : quarter < 1 ? 1 : quarter > 8 ? 8 : (int)quarter;
        tdm_writer_set_build_threads(srv.writer, bt);
    }
    size_t skipped = tdm_loader_run(&srv);
    tdm_log_info("loaded %u meshes (%llu bytes) and %u scenes from %s%s", tdm_catalog_n_meshes(srv.catalog),
                 (unsigned long long)tdm_catalog_bytes(srv.catalog), tdm_catalog_n_scenes(srv.catalog), cfg.data_dir,
                 skipped ? "; some files were skipped (see above)" : "");
    /* a want_pairs request may reserve up to max_reply_pairs: a batch holds at least that much */
    const char *req_trace = getenv("TDM_REQUEST_TRACE"); /* query_pool.c's; reads timed for it (conn.h) */
    srv.trace_reads = req_trace && *req_trace;
    if ((rc = tdm_query_pool_create(srv.engine, cfg.max_batch_tasks, cfg.max_reply_pairs,
                                    tdm_request_query_packed, tdm_request_query_done, &srv, &srv.query_pool)) !=
        TDM_OK) {
        tdm_log_error("dispatcher thread: %s", tdm_strerror(rc));
        goto out;
    }
    tdm_pooler_fairness fair = {cfg.slice_tasks, cfg.latency_lane_tasks, cfg.latency_lane_work};
    tdm_query_pool_set_fairness(srv.query_pool, &fair);
    tdm_query_pool_set_host(srv.query_pool, cfg.host_configs);
    /* auto settings follow the engine: with a device engine, whose lanes spin anyway, the loops
       poll as the pooler's threads do, and a planner's single states go to the express ring */
    int on_device = tdm_sched_configs_on_device(srv.engine);
    /* the express ring (measured: bench/results/ompl_resident.md, twenty-fourth session) */
    int auto_express = cfg.express_configs < 0;
    uint32_t express = auto_express ? (uint32_t)on_device : (uint32_t)cfg.express_configs;
    if (express) {
        rc = tdm_sched_express_start(srv.engine, cfg.express_blocks);
        /* the loops poll the ring for their own requests and write those replies (no thread of its
           own; measured in bench/results/ompl_resident.md, twenty-fifth session);
           TDM_EXPRESS_ON_LOOP=0 (A/B runs): its own polling thread, the reply threads writing */
        const char *on_loop = getenv("TDM_EXPRESS_ON_LOOP");
        int express_on_loop = !(on_loop && !strcmp(on_loop, "0"));
        if (rc == TDM_OK) rc = tdm_query_pool_set_express(srv.query_pool, express, express_on_loop);
        const char *why = rc == TDM_ENODEV ? "it needs a GPU engine" : tdm_strerror(rc);
        if (rc == TDM_OK)
            tdm_log_info("express ring: requests of at most %u configurations, %u resident blocks, polled by %s",
                         express, cfg.express_blocks, express_on_loop ? "the loops" : "its own thread");
        else if (auto_express)
            tdm_log_info("express ring: not started (%s); requests go the usual way", why);
        else
            tdm_log_warn("express-configs %u: the express ring did not start (%s); requests go the usual way",
                         express, why);
        rc = TDM_OK;
    }
    if (cfg.dispatch_poll_us >= 0) tdm_query_pool_set_poll(srv.query_pool, (uint64_t)cfg.dispatch_poll_us);
    srv.loop_spin_ns = 1000 * (uint64_t)(cfg.loop_spin_us >= 0 ? cfg.loop_spin_us : on_device ? 200 : 0);
    srv.ring_park_ns = 1000 * (uint64_t)cfg.ring_park_us;
    /* replies written by the reply threads, or the pooler thread, that packed them (conn.h);
       TDM_DIRECT_REPLIES=0: by the loop (A/B runs) */
    const char *direct = getenv("TDM_DIRECT_REPLIES");
    if (!(direct && !strcmp(direct, "0"))) {
        tdm_query_pool_set_sender(srv.query_pool, tdm_request_query_send);
        /* auto: two with a GPU engine, the ring's replies written by the loops or not (with the loops
           writing them, two beat one in eight paired 64-planner runs: bench/results/ompl_resident.md,
           section 29) */
        int replies = cfg.reply_threads >= 0 ? cfg.reply_threads : on_device ? 2 : 0;
        if ((rc = tdm_query_pool_set_replies(srv.query_pool, replies)) != TDM_OK) {
            tdm_log_error("reply threads: %s", tdm_strerror(rc));
            goto out;
        }
    }
    if (tdm_io_create(&srv, cfg.io_threads, err, sizeof err) != 0 || tdm_io_start(&srv, err, sizeof err) != 0) {
        tdm_log_error("%s", err);
        goto out;
    }
    if ((rc = tdm_server_budget_start(&srv)) != 0) {
        tdm_log_error("timer: %s", uv_strerror(rc));
        goto out;
    }
    if ((rc = tdm_server_signals(&srv)) != 0) {
        tdm_log_error("signals: %s", uv_strerror(rc));
        goto out;
    }
    if (tdm_server_listen(&srv, err, sizeof err) != 0) {
        tdm_log_error("%s", err);
        goto out;
    }
    srv.ready = 1;
    tdm_heartbeat_beat(heartbeat); /* /readyz says so at once */
    /* systemd's Type=notify: loaded and accepting now */
    sd_notifyf(0, "READY=1\nSTATUS=serving %u meshes, %u scenes", tdm_catalog_n_meshes(srv.catalog),
               tdm_catalog_n_scenes(srv.catalog));
    tdm_log_info("ready");
    tdm_io_run(&srv.io[0]);
    status = srv.exit_status;
out:
    if (!srv.stopped) {
        /* a failed start: close whatever was opened through the same path */
        tdm_srv_lock(&srv);
        tdm_server_shutdown(&srv, 1);
        tdm_srv_unlock(&srv);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    tdm_io_join(&srv); /* the I/O threads end once the server stopped (tdm_io_stop_all) */
    tdm_heartbeat_stop(heartbeat);
    uv_run(&loop, UV_RUN_DEFAULT); /* its close */
    tdm_catalog_free(srv.catalog);
    if (uv_loop_close(&loop) != 0) tdm_log_warn("event loop closed with handles still open");
    for (size_t i = 0; i < srv.n_listeners; i++) free(srv.listeners[i].unix_path);
    free(srv.listeners);
    tdm_tls_ctx_free(srv.tls);
    tdm_sched_destroy(srv.engine);
    tdm_datadir_close(srv.datadir);
    tdm_tenants_free(srv.tenants);
    tdm_auth_limit_free(srv.auth_limit);
    tdm_http_stop(http);
    if (latency_fd >= 0) close(latency_fd);
    if (status == TDM_EXIT_GPU_FAILED) tdm_log_info("tandemd stopped, exit status %d: restart it (the GPU failed)", status);
    else tdm_log_info(status == 0 ? "tandemd stopped" : "tandemd failed to start");
    tdm_config_free(&cfg);
    return status;
}
