#include "stats.h"

#include <stdio.h>

#include "log.h"
#include "request_handlers.h"

void tdm_stats_fill(tdm_server *srv, Tandem__V1__StatsReply *r, char *detail, size_t detail_len)
{
    tdm_pooler_stats ds = {0};
    tdm_sched_stats es = {0};
    if (srv->query_pool) tdm_query_pool_get_stats(srv->query_pool, &ds);
    tdm_sched_get_stats(srv->engine, &es);
    r->server_version = TDM_VERSION;
    switch (tdm_sched_backend(srv->engine)) {
    case TDM_BACKEND_GPU: r->engine = TANDEM__V1__ENGINE__ENGINE_GPU; break;
    case TDM_BACKEND_HYBRID: r->engine = TANDEM__V1__ENGINE__ENGINE_HYBRID; break;
    default: r->engine = TANDEM__V1__ENGINE__ENGINE_CPU; break;
    }
    r->uptime_s = (double)(uv_hrtime() - srv->started_ns) / 1e9;
    r->connections = srv->n_active;
    r->requests = srv->counters.requests;
    r->errors = srv->counters.errors;
    r->queries = __atomic_load_n(&srv->counters.queries, __ATOMIC_RELAXED);
    r->batches = ds.batches;
    r->mean_batch_queries = ds.batches ? (double)ds.queries / (double)ds.batches : 0;
    r->mean_batch_tasks = ds.batches ? (double)ds.tasks / (double)ds.batches : 0;
    r->meshes = tdm_catalog_n_meshes(srv->catalog);
    r->scenes = tdm_catalog_n_scenes(srv->catalog);
    r->robots = tdm_catalog_n_robots(srv->catalog);
    r->meshes_bytes = tdm_catalog_bytes(srv->catalog);
    r->engine_seconds = es.seconds;
    r->cpu_queries = es.cpu_queries;
    r->gpu_queries = es.gpu_queries;
    r->gpu_seconds = es.gpu_seconds;
    r->hybrid_queries = es.hybrid_queries;
    r->cpu_tasks = es.cpu_tasks;
    r->gpu_tasks = es.gpu_tasks;
    r->hybrid_tasks = es.hybrid_tasks;
    r->gpu_iterations = es.gpu_iterations;
    r->mean_workpile_pairs = es.gpu_iterations ? (double)es.gpu_pairs / (double)es.gpu_iterations : 0;
    r->device_bytes = es.device_bytes;
    r->device_meshes = es.device_meshes;
    r->dispatch_threshold = es.dispatch_threshold;
    snprintf(detail, detail_len, "%s; %llu requests pooled into %llu batches", tdm_sched_detail(srv->engine),
             (unsigned long long)ds.jobs, (unsigned long long)ds.batches);
    r->engine_detail = detail;
}

void tdm_stats_log(tdm_server *srv)
{
    Tandem__V1__StatsReply r = TANDEM__V1__STATS_REPLY__INIT;
    char detail[512];
    tdm_stats_fill(srv, &r, detail, sizeof detail);
    tdm_log_info("stats: uptime %.0f s, %llu requests, %llu errors, %llu queries in %llu batches (%.1f queries, "
                 "%.1f tasks per batch), engine %.3f s; %u meshes (%llu bytes), %u scenes",
                 r.uptime_s, (unsigned long long)r.requests, (unsigned long long)r.errors,
                 (unsigned long long)r.queries, (unsigned long long)r.batches, r.mean_batch_queries,
                 r.mean_batch_tasks, r.engine_seconds, r.meshes, (unsigned long long)r.meshes_bytes, r.scenes);
    tdm_pooler_stats ds = {0};
    if (srv->query_pool) tdm_query_pool_get_stats(srv->query_pool, &ds);
    tdm_log_info("stats: memory for clients: peak %llu bytes of max-memory %llu, %llu requests or frames refused for "
                 "it; %llu query jobs dropped unrun (their connection closed)",
                 (unsigned long long)srv->mem.peak, (unsigned long long)srv->mem.max,
                 (unsigned long long)srv->mem.refused, (unsigned long long)ds.cancelled);
    if (r.engine != TANDEM__V1__ENGINE__ENGINE_CPU)
        tdm_log_info("stats: queries cpu %llu, gpu %llu, hybrid %llu; tasks cpu %llu, gpu %llu, hybrid %llu; %llu GPU "
                     "workpiles of %.1f pairs, %.3f s on the GPU; %u meshes resident, %llu device bytes; dispatch "
                     "threshold %llu tasks",
                     (unsigned long long)r.cpu_queries, (unsigned long long)r.gpu_queries,
                     (unsigned long long)r.hybrid_queries, (unsigned long long)r.cpu_tasks,
                     (unsigned long long)r.gpu_tasks, (unsigned long long)r.hybrid_tasks,
                     (unsigned long long)r.gpu_iterations, r.mean_workpile_pairs, r.gpu_seconds, r.device_meshes,
                     (unsigned long long)r.device_bytes, (unsigned long long)r.dispatch_threshold);
    tdm_sched_stats es = {0};
    tdm_sched_get_stats(srv->engine, &es);
    if (tdm_sched_express_on(srv->engine))
        tdm_log_info("stats: express ring: %llu configurations answered, %llu given back (run the usual way); %llu "
                     "robot scene programs uploaded, %llu launches",
                     (unsigned long long)es.express_configs, (unsigned long long)es.express_overflows,
                     (unsigned long long)es.express_programs, (unsigned long long)es.express_launches);
    if (es.async_runs)
        tdm_log_info("stats: async lanes: %llu device runs started in flight, %llu waited for an idle lane",
                     (unsigned long long)es.async_runs, (unsigned long long)es.async_waits);
}

void tdm__stats(tdm_conn *c, uint64_t id)
{
    Tandem__V1__StatsReply r = TANDEM__V1__STATS_REPLY__INIT;
    char detail[512];
    tdm_stats_fill(c->srv, &r, detail, sizeof detail);
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_STATS, &r);
}
