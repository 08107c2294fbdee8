#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "tandem.pb-c.h"

#define ADD(x, n) __atomic_fetch_add(&(x), (n), __ATOMIC_RELAXED)
#define GET(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Request latency, seconds: 100 us to 10 s (a one-pose query on loopback takes
 * tens of microseconds; a maximum-size MeshPut tens of seconds). */
static const double lat_le[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,     10};
#define N_LAT (sizeof lat_le / sizeof lat_le[0])
/* Batch sizes (jobs, queries, tasks per engine run): powers of 4 up to 4Mi
 * (max-batch-tasks defaults to 1Mi). */
#define N_SIZE 12

typedef struct histo {
    uint64_t bucket[N_LAT + 1]; /* non-cumulative; the last is +Inf */
    uint64_t count;
    uint64_t sum;               /* ns for latency, units for sizes */
} histo;

typedef struct size_histo {
    uint64_t bucket[N_SIZE + 1];
    uint64_t count, sum;
} size_histo;

static struct {
    uint64_t start_ns;
    time_t start_wall;
    const char *engine_cfg;
    uint64_t requests[TDM_METRICS_TYPES];
    uint64_t errors[TDM_METRICS_TYPES][TDM_METRICS_CODES];
    histo latency[TDM_METRICS_TYPES];
    size_histo batch_jobs, batch_queries, batch_tasks;
    uint64_t accepted, refused;
    uint64_t heartbeat_ns; /* 0 before the first */
    pthread_mutex_t lock;  /* snap */
    tdm_metrics_snapshot snap;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER, .snap = {.not_ready = "starting: loading the data directory"}};

/* Loop thread only. */
static _Thread_local tdm_metrics_mark scope; /* the request this thread handles (each loop its own) */

void tdm_metrics_init(const char *configured_engine)
{
    M.start_ns = uv_hrtime();
    M.start_wall = time(NULL);
    M.engine_cfg = configured_engine;
}

/* ---- scopes ---- */

static int type_index(int body_case)
{
    return body_case > TDM_METRICS_UNDECODABLE && body_case < TDM_METRICS_TYPES ? body_case : TDM_METRICS_UNDECODABLE;
}

tdm_metrics_mark tdm_metrics_enter_frame(uint64_t now_ns)
{
    tdm_metrics_mark prev = scope;
    scope = (tdm_metrics_mark){TDM_METRICS_UNDECODABLE, now_ns, 0, 1};
    return prev;
}

tdm_metrics_mark tdm_metrics_enter(const tdm_metrics_mark *m)
{
    tdm_metrics_mark prev = scope;
    scope = *m;
    scope.open = 1;
    return prev;
}

void tdm_metrics_leave(tdm_metrics_mark prev) { scope = prev; }

void tdm_metrics_request(int body_case)
{
    scope.type = type_index(body_case);
    ADD(M.requests[scope.type], 1);
}

void tdm_metrics_mark_take(tdm_metrics_mark *m)
{
    *m = scope.open ? scope : (tdm_metrics_mark){TDM_METRICS_CONNECTION, uv_hrtime(), 0, 1};
    m->answered = 0;
}

void tdm_metrics_reply(void)
{
    if (!scope.open || scope.answered || scope.type == TDM_METRICS_CONNECTION) return;
    scope.answered = 1;
    uint64_t ns = uv_hrtime() - scope.t0;
    histo *h = &M.latency[scope.type];
    size_t b = 0;
    while (b < N_LAT && (double)ns > lat_le[b] * 1e9) b++;
    ADD(h->bucket[b], 1);
    ADD(h->sum, ns);
    ADD(h->count, 1);
}

void tdm_metrics_error(int code)
{
    int t = scope.open ? scope.type : TDM_METRICS_CONNECTION;
    if (code < 0 || code >= TDM_METRICS_CODES) code = TDM_METRICS_CODES - 1;
    ADD(M.errors[t][code], 1);
}

/* ---- events ---- */

static void size_observe(size_histo *h, uint64_t v)
{
    size_t b = 0;
    uint64_t le = 1;
    while (b < N_SIZE && v > le) b++, le *= 4;
    ADD(h->bucket[b], 1);
    ADD(h->sum, v);
    ADD(h->count, 1);
}

void tdm_metrics_batch(uint64_t jobs, uint64_t queries, uint64_t tasks)
{
    size_observe(&M.batch_jobs, jobs);
    size_observe(&M.batch_queries, queries);
    size_observe(&M.batch_tasks, tasks);
}

void tdm_metrics_accepted(void) { ADD(M.accepted, 1); }
void tdm_metrics_refused(void) { ADD(M.refused, 1); }

/* ---- gauges ---- */

void tdm_metrics_publish(const tdm_metrics_snapshot *s, uint64_t now_ns)
{
    pthread_mutex_lock(&M.lock);
    M.snap = *s;
    pthread_mutex_unlock(&M.lock);
    __atomic_store_n(&M.heartbeat_ns, now_ns, __ATOMIC_RELEASE);
}

void tdm_metrics_not_ready(const char *why)
{
    pthread_mutex_lock(&M.lock);
    M.snap.ready = 0;
    M.snap.not_ready = why;
    pthread_mutex_unlock(&M.lock);
}

int tdm_metrics_ready(const char **why)
{
    pthread_mutex_lock(&M.lock);
    int ready = M.snap.ready;
    *why = M.snap.not_ready ? M.snap.not_ready : "";
    pthread_mutex_unlock(&M.lock);
    return ready;
}

double tdm_metrics_heartbeat_age(void)
{
    uint64_t hb = __atomic_load_n(&M.heartbeat_ns, __ATOMIC_ACQUIRE);
    if (!hb) return -1;
    uint64_t now = uv_hrtime();
    return now > hb ? (double)(now - hb) / 1e9 : 0;
}

/* ---- rendering ---- */

static const char *type_name(int t)
{
    if (t == TDM_METRICS_CONNECTION) return "connection";
    if (t == TDM_METRICS_UNDECODABLE) return "undecodable";
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&tandem__v1__request__descriptor, (unsigned)t);
    return f ? f->name : NULL;
}

/* "LIMIT" for ERROR_LIMIT; NULL for a value the protocol does not name. */
static const char *code_name(int code)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&tandem__v1__error_code__descriptor, code);
    if (!v) return NULL;
    return strncmp(v->name, "ERROR_", 6) == 0 ? v->name + 6 : v->name;
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void size_histo_write(FILE *f, const char *name, const char *help, size_histo *h)
{
    head(f, name, "histogram", help);
    uint64_t cum = 0, le = 1;
    for (size_t b = 0; b < N_SIZE; b++, le *= 4) {
        cum += GET(h->bucket[b]);
        fprintf(f, "%s_bucket{le=\"%llu\"} %llu\n", name, (unsigned long long)le, (unsigned long long)cum);
    }
    cum += GET(h->bucket[N_SIZE]);
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %llu\n%s_count %llu\n", name, (unsigned long long)cum, name,
            (unsigned long long)GET(h->sum), name, (unsigned long long)cum);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
    head(f, name, "gauge", help);
    fprintf(f, "%s %.17g\n", name, v);
}

static void counter(FILE *f, const char *name, const char *help, double v)
{
    head(f, name, "counter", help);
    fprintf(f, "%s %.17g\n", name, v);
}

char *tdm_metrics_render(size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    tdm_metrics_snapshot s;
    pthread_mutex_lock(&M.lock);
    s = M.snap;
    pthread_mutex_unlock(&M.lock);
    const tdm_sched_stats *e = &s.engine;

    head(f, "tandem_build_info", "gauge", "tandemd's version and engines (value 1).");
    fprintf(f, "tandem_build_info{version=\"%s\",engine_configured=\"%s\",engine=\"%s\"} 1\n", TDM_VERSION,
            M.engine_cfg ? M.engine_cfg : "", tdm_backend_name((tdm_backend_kind)s.backend));
    gauge(f, "tandem_uptime_seconds", "Seconds since tandemd started.", (double)(uv_hrtime() - M.start_ns) / 1e9);
    gauge(f, "tandem_start_time_seconds", "Start time, seconds since the Unix epoch.", (double)M.start_wall);
    gauge(f, "tandem_ready", "1 when GET /readyz answers 200.", s.ready);
    gauge(f, "tandem_heartbeat_age_seconds", "Seconds since the event loop last published (-1: not yet).",
          tdm_metrics_heartbeat_age());

    head(f, "tandem_requests_total", "counter", "Requests decoded, by type.");
    for (int t = TDM_METRICS_UNDECODABLE + 1; t < TDM_METRICS_TYPES; t++)
        if (type_name(t))
            fprintf(f, "tandem_requests_total{type=\"%s\"} %llu\n", type_name(t),
                    (unsigned long long)GET(M.requests[t]));
    head(f, "tandem_errors_total", "counter",
         "Error replies, by request type (connection: not about a request; undecodable: a frame that did not "
         "decode) and code.");
    for (int t = 0; t < TDM_METRICS_TYPES; t++)
        for (int c = 0; c < TDM_METRICS_CODES; c++) {
            uint64_t v = GET(M.errors[t][c]);
            if (!v || !type_name(t)) continue;
            fprintf(f, "tandem_errors_total{type=\"%s\",code=\"%s\"} %llu\n", type_name(t),
                    code_name(c) ? code_name(c) : "OTHER", (unsigned long long)v);
        }
    head(f, "tandem_request_duration_seconds", "histogram",
         "From a request's last byte read to its reply queued, by type.");
    for (int t = TDM_METRICS_UNDECODABLE; t < TDM_METRICS_TYPES; t++) {
        const char *name = type_name(t);
        if (!name) continue;
        histo *h = &M.latency[t];
        uint64_t cum = 0;
        for (size_t b = 0; b < N_LAT; b++) {
            cum += GET(h->bucket[b]);
            fprintf(f, "tandem_request_duration_seconds_bucket{type=\"%s\",le=\"%g\"} %llu\n", name, lat_le[b],
                    (unsigned long long)cum);
        }
        cum += GET(h->bucket[N_LAT]);
        fprintf(f, "tandem_request_duration_seconds_bucket{type=\"%s\",le=\"+Inf\"} %llu\n", name,
                (unsigned long long)cum);
        fprintf(f, "tandem_request_duration_seconds_sum{type=\"%s\"} %.9f\n", name, (double)GET(h->sum) / 1e9);
        fprintf(f, "tandem_request_duration_seconds_count{type=\"%s\"} %llu\n", name, (unsigned long long)cum);
    }

    counter(f, "tandem_connections_accepted_total", "Connections accepted.", (double)GET(M.accepted));
    counter(f, "tandem_connections_refused_total",
            "Connections refused at accept (max-connections, max-unauthenticated, max-connections-per-address).",
            (double)GET(M.refused));
    head(f, "tandem_connections", "gauge", "Open connections, by state (max-connections counts both).");
    fprintf(f, "tandem_connections{state=\"authenticated\"} %u\n", s.conns_open - s.conns_unauthenticated);
    fprintf(f, "tandem_connections{state=\"unauthenticated\"} %u\n", s.conns_unauthenticated);
    gauge(f, "tandem_ring_connections", "Open connections whose frames go through shared-memory rings (RingOpen).",
          (double)s.conns_ring);
    gauge(f, "tandem_ring_connections_parked",
          "Ring connections idle past ring-park-us: no longer polled until their client rings the doorbell.",
          (double)s.conns_ring_parked);
    gauge(f, "tandem_ring_memory_bytes", "Shared memory mapped for ring connections (max-ring-memory).",
          (double)s.ring_bytes);

    head(f, "tandem_stored", "gauge", "Objects stored, by kind.");
    fprintf(f, "tandem_stored{kind=\"mesh\"} %u\ntandem_stored{kind=\"scene\"} %u\ntandem_stored{kind=\"robot\"} %u\n",
            s.meshes, s.scenes, s.robots);
    gauge(f, "tandem_scenes_ephemeral",
          "Scenes put ephemeral (held in memory only, gone at a restart), counted in tandem_stored's scenes.",
          (double)s.scenes_ephemeral);
    gauge(f, "tandem_meshes_bytes", "Bytes of stored meshes and their trees (max-meshes-bytes).",
          (double)s.meshes_bytes);
    gauge(f, "tandem_pooler_jobs", "Query jobs in the pooler: waiting for an engine run or in one.",
          (double)s.pooler_jobs);
    gauge(f, "tandem_pooler_owners",
          "Connections or tenants (share-by) with query jobs waiting for an engine lane, taking turns.",
          (double)s.pooler_owners);
    gauge(f, "tandem_writer_ops", "Writer-thread operations (puts, deletes) submitted and not done.",
          (double)s.writer_ops);
    gauge(f, "tandem_upload_bytes", "Decoded MeshPut requests waiting for the writer (max-upload-bytes).",
          (double)s.upload_bytes);
    counter(f, "tandem_queries_total", "Queries (poses or configurations) answered.", (double)s.queries);

    size_histo_write(f, "tandem_batch_jobs", "Requests pooled into one engine run (tdm_sched_run).",
                     &M.batch_jobs);
    size_histo_write(f, "tandem_batch_queries", "Queries in one engine run.", &M.batch_queries);
    size_histo_write(f, "tandem_batch_tasks", "(query, object pair) tasks in one engine run: its workpile.",
                     &M.batch_tasks);

    gauge(f, "tandem_engine_lanes", "Engine runs that may be in flight at once (engine-lanes x GPU engines).",
          s.lanes);
    head(f, "tandem_engine_queries_total", "counter", "Queries answered, by the engine that ran them.");
    fprintf(f, "tandem_engine_queries_total{engine=\"cpu\"} %llu\ntandem_engine_queries_total{engine=\"gpu\"} %llu\n"
               "tandem_engine_queries_total{engine=\"hybrid\"} %llu\n",
            (unsigned long long)e->cpu_queries, (unsigned long long)e->gpu_queries,
            (unsigned long long)e->hybrid_queries);
    head(f, "tandem_engine_tasks_total", "counter", "Tasks run, by engine.");
    fprintf(f, "tandem_engine_tasks_total{engine=\"cpu\"} %llu\ntandem_engine_tasks_total{engine=\"gpu\"} %llu\n"
               "tandem_engine_tasks_total{engine=\"hybrid\"} %llu\n",
            (unsigned long long)e->cpu_tasks, (unsigned long long)e->gpu_tasks, (unsigned long long)e->hybrid_tasks);
    counter(f, "tandem_engine_runs_total", "Engine runs (tdm_sched_run calls).", (double)e->runs);
    counter(f, "tandem_engine_seconds_total", "Wall time inside engine runs.", e->seconds);
    counter(f, "tandem_gpu_seconds_total", "Wall time of the GPU parts of engine runs.", e->gpu_seconds);
    counter(f, "tandem_gpu_workpiles_total", "Workpiles the GPU tested (BVTT levels, hybrid workpiles).",
            (double)e->gpu_iterations);
    counter(f, "tandem_gpu_workpile_pairs_total", "Node and leaf pairs in them (divided by workpiles: mean size).",
            (double)e->gpu_pairs);
    gauge(f, "tandem_dispatch_threshold_tasks", "engine auto: runs of fewer tasks go to the CPU engine.",
          (double)e->dispatch_threshold);
    gauge(f, "tandem_gpu_meshes", "Trees resident on the GPU.", e->device_meshes);
    gauge(f, "tandem_gpu_memory_used_bytes", "Device memory held: resident meshes and scratch.",
          (double)e->device_bytes);
    gauge(f, "tandem_gpu_memory_budget_bytes", "Device memory tandemd may hold (gpu-memory; 0 without a GPU).",
          (double)e->device_budget);
    gauge(f, "tandem_gpu_failed", "1 once the GPU failed for good (a sticky CUDA error): queries run on the CPU.",
          e->gpu_broken);
    gauge(f, "tandem_gpu_engines", "GPU-resident engines, one per gpu-devices entry (0: none).", e->gpu_engines);
    gauge(f, "tandem_gpu_engines_failed", "GPU engines failed for good: their runs go to the others, or the CPU.",
          e->gpu_engines_broken);
    if (e->gpu_engines) {
        head(f, "tandem_gpu_engine_tasks_total", "counter", "Tasks each GPU engine ran (engine: its gpu-devices entry).");
        for (uint32_t k = 0; k < e->gpu_engines && k < TDM_SCHED_MAX_GPUS; k++)
            fprintf(f, "tandem_gpu_engine_tasks_total{engine=\"%u\",device=\"%d\"} %llu\n", k, e->gpu_engine_device[k],
                    (unsigned long long)e->gpu_engine_tasks[k]);
    }

    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
