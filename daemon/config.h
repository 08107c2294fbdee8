/* tandemd's configuration: every limit of proto/README.md's Limits table, the
 * server's own bounds, threads, auth and listen addresses.
 *
 * One table in config.c drives the command-line flags, the JSON config file
 * (same names as the flags, without the dashes in front; `_` may stand for `-`)
 * and `--help`. Precedence: built-in defaults, then the file, then the flags. */
#ifndef TDM_DAEMON_CONFIG_H
#define TDM_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Shortest auth token accepted: 22 characters carry 128 bits in base64. */
#define TDM_AUTH_TOKEN_MIN 22

typedef struct tdm_config {
    char **listen;            /* "host:port" or "unix:/path" */
    size_t n_listen;
    char *data_dir;
    char *config_file;
    char *engine;             /* "auto", "cpu", "gpu", "hybrid" */
    int threads;              /* engine threads, 0: one per core */
    int gpu_device;           /* one CUDA device index; -1 ("none", the default): gpu_devices decides */
    char *gpu_devices;        /* "all", or CUDA device indices separated by commas (tdm_sched_devices_parse) */
    uint64_t gpu_memory;      /* device memory the engine may hold (meshes and scratch); 0: 80% of the device */
    int gpu_streams;          /* batches in flight on the GPU at once */
    uint64_t gpu_program_cache; /* device memory a GPU lane keeps for robot scenes' programs (0: none) */
    int engine_calibrate;     /* auto: measure both engines at start-up to set the dispatch threshold */
    char *gpu_traversal;      /* "pairs", "blocks" or "wide" */
    int engine_lanes;         /* engine runs in flight at once (pooler threads) */
    char *auth_token;         /* "" when none */
    char *auth_token_file;
    char *tenants_file;       /* "" when none: one default tenant (tenants.h) */
    uint32_t auth_fail_max;   /* wrong tokens from one address within auth_fail_window ... */
    uint32_t auth_fail_window; /* ... seconds block it for auth_fail_block seconds (0: never) */
    uint32_t auth_fail_block;
    uint32_t auth_fail_addresses; /* addresses the count is kept for */
    int unix_socket_group;    /* Unix sockets 0660 rather than 0600 */
    int insecure_listen;      /* listen beyond loopback without an auth token */
    char *tls_cert;           /* PEM certificate chain: TCP listeners speak TLS; "" when none */
    char *tls_key;            /* its PEM private key */
    char *tls_ca;             /* PEM CA certificates client certificates must chain to; "": none asked */
    int log_level;            /* tdm_log_level */
    /* protocol limits (HelloReply.limits) */
    uint32_t max_frame_bytes;
    uint32_t max_vertices;
    uint32_t max_triangles;
    uint32_t max_objects;
    uint32_t max_scene_triangles;  /* a RobotScenePut's attached and world shapes, together */
    uint32_t max_robot_triangles;  /* a robot's collision elements (their distinct shapes), together */
    uint32_t max_queries;
    uint32_t max_contacts;
    uint32_t io_threads;      /* event loops besides the main one, taking the connections (io.h) */
    int cpu_latency_us;       /* held in /dev/cpu_dma_latency while running (main.c); -1: off */
    int loop_spin_us;         /* a loop polls this long after its last read before it sleeps; -1: auto (main.c) */
    int reply_threads;        /* threads writing the pooler's replies (tdm_query_pool_set_replies); -1: auto (main.c) */
    int build_threads;        /* threads building a large MeshPut's tree (tdm_writer_set_build_threads); -1: auto */
    uint32_t max_pipelined;
    uint32_t max_connections;
    uint64_t max_meshes_bytes;
    uint32_t max_robots;           /* robots stored at once */
    uint32_t max_robot_text_bytes; /* URDF, SRDF, planning-scene YAML: bytes each */
    uint64_t max_motion_states;    /* states of one MotionCheck's motions together */
    /* the server's own bounds */
    uint64_t max_output_bytes; /* per connection: stop reading above this much unsent reply data */
    uint64_t max_output_bytes_hard; /* per connection: close it above this much (replies of requests in flight) */
    uint64_t max_upload_bytes; /* decoded MeshPut requests waiting for the writer thread, all connections */
    uint32_t max_reply_pairs;  /* contact pairs one Query reply may carry (want_pairs) */
    uint64_t max_query_tasks;  /* queries x checked object pairs in one Query request */
    uint32_t max_batch_tasks;  /* tasks per engine run: pooling cap and engine scratch bound */
    uint32_t device_configs_min; /* configurations (or motion states) from which a request runs as
                                    configurations (tdm_sched_run_configs); 0: never */
    uint32_t device_configs_small; /* 1: with an engine that runs configurations on the device, every
                                      request of configurations goes as configurations (tdm_configs_min) */
    uint64_t max_query_work;   /* box + triangle tests per query (0: none), the request's budget per query */
    uint32_t motion_window;    /* a MotionCheck's first round: states per open motion (0: by engine) */
    uint32_t motion_probes;    /* a MotionCheck with any_state: its first round's states, coarse to fine */
    uint64_t slice_tasks;      /* a larger request runs this many tasks per turn (0: max_batch_tasks) */
    uint64_t latency_lane_tasks, latency_lane_work; /* the pooler's latency lane (workpile/pooler.h) */
    char *share_by;            /* "auto", "connection", "tenant", "off": the pooler's owners (conn.h) */
    int host_lanes;            /* the pooler's host threads (workpile/pooler.h, tdm_pooler_set_host) */
    int dispatch_poll_us;      /* idle pooler threads' polling (tdm_pooler_set_poll); -1: auto */
    uint32_t host_configs;     /* ... and the requests they take: at most this many configurations */
    int express_configs;       /* requests of at most this many configurations go to the GPU's express ring
                                  (workpile/pooler.h, tdm_pooler_set_express; 0: off; -1: auto, main.c) */
    uint32_t express_blocks;   /* ... its resident blocks */
    uint32_t max_name_bytes;   /* mesh and scene names, client names */
    uint32_t shutdown_timeout; /* seconds a graceful shutdown waits for clients before closing them */
    uint32_t hello_timeout;    /* seconds a new connection has to say Hello (0: no limit) */
    uint32_t max_unauthenticated; /* connections open before their Hello, at once */
    uint32_t max_per_address;  /* TCP connections from one address, at once (0: no limit) */
    uint32_t max_ephemeral;    /* ephemeral scenes one connection holds at once */
    uint32_t idle_timeout;     /* seconds an authenticated connection may do nothing (0: no limit) */
    uint64_t max_memory;       /* bytes clients may make the daemon hold, all counters of budget.h (0: half of RAM) */
    uint64_t max_input_bytes;  /* partial frames of all connections together */
    uint32_t max_ring_bytes;   /* largest shared-memory ring of a same-host client (0: none offered; conn.h) */
    uint64_t max_ring_memory;  /* the rings' mappings of all connections together */
    uint32_t ring_park_us;     /* a ring idle this long is no longer polled (conn.h; 0: never) */
    uint32_t output_stall_timeout; /* seconds replies may wait with none taken before the close (0: no limit) */
    /* operations (http.h, heartbeat.h) */
    char *metrics_listen;      /* HOST:PORT of the metrics and probes endpoint; "" off */
    uint32_t metrics_interval; /* ms between the loop's heartbeats (gauges published, watchdog pinged) */
    uint32_t health_loop_timeout; /* seconds without a heartbeat before /healthz fails */
    int exit_on_gpu_failure;   /* exit 3 after a sticky CUDA error, for the supervisor to restart */
} tdm_config;

/* Fills *c from the defaults, the config file named by --config (if any) and the
 * flags. Returns 0 (run), 1 (--help or --version was printed to stdout: exit 0),
 * or -1 with a one-line message in err (a usage error: exit 2). The caller frees
 * *c with tdm_config_free, whatever the result. */
int tdm_config_load(tdm_config *c, int argc, char **argv, char *err, size_t errlen);
void tdm_config_free(tdm_config *c);

/* Writes the --help text: every option, its default and what it bounds. */
void tdm_config_usage(FILE *f);
/* Logs the effective configuration at debug level (the auth token masked). */
void tdm_config_log(const tdm_config *c);

#endif
