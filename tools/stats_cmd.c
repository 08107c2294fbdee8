/* `tandem stats`: the server's counters, one key=value per line. */
#include <stdio.h>

#include "cli.h"
#include "remote.h"

int tdm_cmd_stats(int argc, char **argv)
{
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    if (tdm_cli_parse(argc, argv, opts, 1, "stats") < 0) return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    tdm_stats s;
    if (tdm_stats_get(c, &s)) {
        tdm_cli_error("stats: %s", tdm_client_errstr(c));
        tdm_client_free(c);
        return TDM_EXIT_FAIL;
    }
    tdm_client_free(c);
    printf("server_version=%s\n", s.server_version);
    printf("engine=%s\n", tdm_engine_name(s.engine));
    printf("uptime_s=%.3f\n", s.uptime_s);
    printf("connections=%u\n", s.connections);
    printf("requests=%llu\n", (unsigned long long)s.requests);
    printf("errors=%llu\n", (unsigned long long)s.errors);
    printf("queries=%llu\n", (unsigned long long)s.queries);
    printf("batches=%llu\n", (unsigned long long)s.batches);
    printf("mean_batch_queries=%.3f\n", s.mean_batch_queries);
    printf("mean_batch_tasks=%.3f\n", s.mean_batch_tasks);
    printf("meshes=%u\n", s.meshes);
    printf("scenes=%u\n", s.scenes);
    printf("meshes_bytes=%llu\n", (unsigned long long)s.meshes_bytes);
    printf("engine_seconds=%.6f\n", s.engine_seconds);
    printf("cpu_queries=%llu\n", (unsigned long long)s.cpu_queries);
    printf("gpu_queries=%llu\n", (unsigned long long)s.gpu_queries);
    printf("gpu_seconds=%.6f\n", s.gpu_seconds);
    printf("engine_detail=%s\n", s.engine_detail);
    printf("hybrid_queries=%llu\n", (unsigned long long)s.hybrid_queries);
    printf("cpu_tasks=%llu\n", (unsigned long long)s.cpu_tasks);
    printf("gpu_tasks=%llu\n", (unsigned long long)s.gpu_tasks);
    printf("hybrid_tasks=%llu\n", (unsigned long long)s.hybrid_tasks);
    printf("gpu_iterations=%llu\n", (unsigned long long)s.gpu_iterations);
    printf("mean_workpile_pairs=%.3f\n", s.mean_workpile_pairs);
    printf("device_bytes=%llu\n", (unsigned long long)s.device_bytes);
    printf("device_meshes=%u\n", s.device_meshes);
    printf("dispatch_threshold=%llu\n", (unsigned long long)s.dispatch_threshold);
    printf("robots=%u\n", s.robots);
    return 0;
}
