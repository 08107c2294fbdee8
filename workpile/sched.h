/* The scheduler boundary: pose queries on scenes in, per-query answers out.
 *
 * The daemon (with pooler.h) and `tandem check` talk to this header only; which
 * engine answers is hidden behind tdm_sched. A run takes a whole batch of
 * queries, which may name different scenes and come from different clients, and
 * expands every (query, checked object pair) into one task list that an engine
 * runs at once: pooling small requests into large runs is what keeps every core
 * (or the GPU) busy.
 *
 * Engines (backend.h): CPU (cpu_engine.h), GPU-resident (gpu_engine.h over
 * gpu/gpu.h) and hybrid (CPU traversal, GPU tests: hybrid_engine.h over
 * gpu/hybrid.h). AUTO, on a machine with a GPU, sends each chunk to the CPU or
 * the GPU-resident engine by a cost model calibrated at creation
 * (cost_model.h, calibrate.h).
 *
 * Thread use: up to tdm_sched_lanes(e) threads may call tdm_sched_run at once
 * (the pooler runs that many threads); each run takes a lane of its own
 * (scratch, and its own lane of each engine: streams and buffers on the GPU),
 * so that one run's host work overlaps another's GPU work; a further caller
 * waits for a lane. Every engine's host work runs on the scheduler's one thread
 * pool (pool.h), shared by the lanes; nothing calls back into the caller.
 *
 * Several GPUs (gpu_devices): one GPU-resident engine per listed device, each
 * with `lanes` lanes of its own (streams, buffers, its own copy of every
 * resident tree), so the scheduler has lanes x devices lanes, each bound to
 * one device. A run takes the free lane of the device with the fewest runs in
 * flight (ties: the device after the last one chosen), so concurrent runs (the
 * pooler's threads) spread over the devices and even one caller's runs take
 * turns; a run's chunks all go to its lane's device (or the CPU engine). A
 * device index may be listed twice: two independent engines on one GPU (the
 * multi-device path tested on a one-GPU machine). The hybrid engine runs on
 * the first listed device only. */
#ifndef TDM_WORKPILE_SCHED_H
#define TDM_WORKPILE_SCHED_H

#include "../geom/kin.h"
#include "../geom/query.h"
#include "scene.h"

typedef enum tdm_backend_kind {
    TDM_BACKEND_AUTO = 0,  /* the best engine this build and machine have */
    TDM_BACKEND_CPU = 1,
    TDM_BACKEND_GPU = 2,
    TDM_BACKEND_HYBRID = 3
} tdm_backend_kind;

const char *tdm_backend_name(tdm_backend_kind k); /* "auto", "cpu", "gpu", "hybrid" */
/* Parses "auto", "cpu", "gpu" or "hybrid": 0, or TDM_EINVAL. */
int tdm_backend_parse(const char *name, tdm_backend_kind *out);

/* How the GPU-resident traversal maps threads to node pairs (gpu/gpu.h explains
 * each; all give the same answers). */
typedef enum tdm_traversal {
    TDM_TRAVERSAL_PAIRS = 0,  /* one thread per node pair (the default: the fastest measured) */
    TDM_TRAVERSAL_BLOCKS = 1, /* four threads per pair of sibling blocks */
    TDM_TRAVERSAL_WIDE = 2    /* the four-wide blocked hierarchy, sixteen threads per block pair */
} tdm_traversal;

/* Parses "pairs", "blocks" or "wide": 0, or TDM_EINVAL. */
int tdm_traversal_parse(const char *name, tdm_traversal *out);

/* One intersecting triangle pair, in object ids: object_a < object_b, and each
 * triangle indexes its own object's mesh. */
typedef struct tdm_sched_contact { uint32_t object_a, triangle_a, object_b, triangle_b; } tdm_sched_contact;

typedef struct tdm_sched_query {
    const tdm_scene *scene;  /* borrowed: must outlive the run */
    const tdm_xform *poses;  /* borrowed: scene->n_movable transforms (object frame -> world), in
                                scene->movable order */
    tdm_mode mode;
    uint32_t max_contacts;   /* contacts mode: cap on the pairs counted, >= 1; ignored in bool mode */
    tdm_sched_contact *pairs;      /* optional, borrowed (contacts mode): room for max_contacts pairs, which
                                receive the first pairs counted, in checked-pair order */
    tdm_work *work;          /* optional, borrowed: the account the query's traversals count against
                                (geom/query.h); queries may share one. When tdm_work_verdict says it
                                stopped early, the answers of every query on it are incomplete; with
                                its any_stop set, once one query on it collides the others not yet run
                                are answered free, unrun (bool mode, the CPU engine) */
} tdm_sched_query;

typedef struct tdm_sched_result {
    uint32_t colliding;
    uint32_t object_a, object_b; /* when colliding: contacts mode, the smallest colliding (a, b); bool
                                    mode, a colliding pair; a < b */
    uint32_t contacts;           /* pairs counted, at most max_contacts (1 in bool mode when colliding) */
    uint32_t truncated;          /* contacts mode: more than max_contacts pairs intersect */
    uint32_t n_pairs;            /* pairs written to query.pairs (== contacts when pairs was given) */
} tdm_sched_result;

/* The most GPU devices (engines) one scheduler runs on. */
#define TDM_SCHED_MAX_GPUS 8

typedef struct tdm_sched_config {
    tdm_backend_kind kind; /* TDM_BACKEND_AUTO by default: the GPU engines with dispatch when a GPU is
                             present, else the CPU engine */
    int threads;          /* CPU threads working on a run, the caller's included; 0: one per core */
    uint32_t chunk_tasks; /* most tasks held at once: a larger run is done in pieces (default 262144,
                             ~45 MB of scratch) */
    int gpu_device;           /* one CUDA device, for compatibility: >= 0 runs on that device alone (then
                                 n_gpu_devices must be 0); -1 (the default): gpu_devices decides */
    uint64_t gpu_memory;      /* bytes of device memory each GPU engine (one per listed device) may hold,
                                 meshes plus scratch; 0: 80% of its device's memory, shared evenly by the
                                 engines of a device listed more than once */
    int gpu_streams;          /* batches in flight at once on the GPU, each on its own stream (default 2) */
    uint64_t gpu_program_cache; /* bytes of device memory each GPU lane keeps for robot scenes' programs
                                   between runs (gpu/gpu.h, "resident programs"; default 16 MiB; 0: none) */
    int calibrate;            /* AUTO: measure both engines at creation to set the dispatch threshold
                                 (default 1); 0 keeps the built-in threshold */
    tdm_traversal gpu_traversal; /* how the GPU-resident traversal maps threads to node pairs */
    int lanes;                /* runs in flight at once per GPU device (per engine when there is no GPU),
                                 1..8 (default 3); the hybrid engine has one. tandemd, 64 clients x 1024
                                 poses on the H100 host, cubicles bool: 1 lane ~12M queries/s, 2 ~15M, 3
                                 ~17M (bench/results/lanes.md) */
    int gpu_devices[TDM_SCHED_MAX_GPUS]; /* the CUDA devices the GPU engines run on, one engine each, in
                                 this order (the first also runs the hybrid engine and the calibration);
                                 an index may repeat (one engine more on that GPU) */
    int n_gpu_devices;        /* 0 (the default): every device of the machine, one engine each */
    int host_lanes;           /* 0..8 (default 0): lanes of the CPU engine alone, beside the lanes above, for
                                 tdm_sched_run_configs_host: its runs never wait for a device run's lane */
} tdm_sched_config;

/* Parses a device list: "all" (*n = 0: every device present), or device indices
 * 0..1024 separated by commas, at most TDM_SCHED_MAX_GPUS of them, repeats
 * allowed ("0,1", "0,0"). Returns 0, or TDM_EINVAL with one line in why naming
 * the bad entry. */
int tdm_sched_devices_parse(const char *text, int devices[TDM_SCHED_MAX_GPUS], int *n, char *why, size_t whylen);

tdm_sched_config tdm_sched_config_default(void);

typedef struct tdm_sched tdm_sched;

/* Returns 0, TDM_ENODEV (a GPU or hybrid engine was asked for and this build or
 * machine has none; `why` says which), TDM_EINVAL, TDM_ENOMEM or TDM_ESYS. `why`
 * (optional) receives one line on failure. */
int tdm_sched_create(const tdm_sched_config *cfg, tdm_sched **out, char *why, size_t whylen);
/* No run may be in progress. */
void tdm_sched_destroy(tdm_sched *e);

tdm_backend_kind tdm_sched_backend(const tdm_sched *e); /* never AUTO */
/* One line for logs and stats: which engine, how many threads, on which
 * devices, why no GPU. Owned by the engine. */
const char *tdm_sched_detail(const tdm_sched *e);
/* How many threads may run at once: tdm_sched_config.lanes x the GPU engines
 * (x 1 without a GPU; 1 for the hybrid). */
int tdm_sched_lanes(const tdm_sched *e);
/* Host lanes (tdm_sched_config.host_lanes): that many more threads may call
 * tdm_sched_run_configs_host at once without waiting for the others' runs. */
int tdm_sched_host_lanes(const tdm_sched *e);
/* GPU-resident engines (listed devices started), 0 without a GPU engine. */
int tdm_sched_gpu_engines(const tdm_sched *e);

/* Device-resident trees (GPU and hybrid engines). tdm_sched_mesh_add copies a
 * tree to the device so that queries on scenes using it can run there; a scene
 * with a tree that is not resident runs on the CPU engine. Keyed by the tree's
 * address: the tree must stay alive and unchanged until tdm_sched_mesh_remove.
 * Adding a resident tree again counts a reference. With several GPU engines the
 * tree goes to every one (a device that failed for good is skipped), all or
 * nothing: when one of them cannot hold it, the copies already made are freed
 * and the add fails, leaving nothing on any device. Returns 0 (also on a CPU
 * engine, where it does nothing), TDM_EGPUMEM (over a memory budget, or a
 * device is full: nothing is held and nothing else changes), TDM_EGPU (a device
 * failed, or every one has failed) or TDM_ENOMEM. May block for the runs in
 * progress (it takes a lane of each device in turn). Any thread.
 *
 * tdm_sched_mesh_remove drops a reference; at zero the tree is no longer used
 * by later runs and its device memory is freed by the next run or upload on
 * each engine, or by tdm_sched_reclaim, whichever comes first (no run in
 * progress may still use it: the caller's reference counting sees to that).
 * Never blocks. Any thread. */
int tdm_sched_mesh_add(tdm_sched *e, const tdm_bvh *bvh);
/* n trees at once (a scene's): as tdm_sched_mesh_add on each in order, but a
 * lane of each device is taken once for all of them, not once per tree (under
 * load each take waits for a run to end: a planning scene of tens of objects
 * then waited tens of runs). *added: how many of bvhs[0 ..) are now resident
 * (referenced once more each): n on success; on failure those before the tree
 * that failed, which the caller removes as usual. A tree listed twice counts two
 * references. Returns as tdm_sched_mesh_add. */
int tdm_sched_meshes_add(tdm_sched *e, const tdm_bvh *const *bvhs, size_t n, size_t *added);
void tdm_sched_mesh_remove(tdm_sched *e, const tdm_bvh *bvh);
/* Frees the device copies of removed trees now, on each GPU engine that has a
 * lane free (without that, an engine that runs nothing more would hold them, and
 * show them in its stats, until its next run or upload). Returns how many
 * engines still hold some because each of their lanes was running (their runs
 * free them at their next start; call again later), 0 when none does. May block
 * for the frees themselves (a device's memory given back), never for a run: for
 * an idle thread (the pooler's, before it sleeps). tdm_sched_reclaim_due says,
 * without a lock, whether a tree left since the last complete reclaim. Any
 * thread. */
int tdm_sched_reclaim(tdm_sched *e);
int tdm_sched_reclaim_due(tdm_sched *e);
/* fn(data) is called when a tree leaves the devices (tdm_sched_mesh_remove drops
 * its last reference), on the thread that removed it, with nothing of the
 * scheduler's locked but the hook's own: a wake-up for a thread that calls
 * tdm_sched_reclaim (the pooler's). It must not block, nor add or remove trees.
 * fn NULL: none. Once set to NULL, no call is in progress nor starts. One hook
 * per scheduler. */
void tdm_sched_on_removed(tdm_sched *e, void (*fn)(void *data), void *data);

/* Sizes every lane's scratch (touched, so that no run pays its page faults)
 * and GPU buffers for runs of up to max_tasks tasks, and loads the kernels
 * (and their CUDA graphs), so that the first runs pay for none of it.
 * Optional. TDM_ENOMEM, or TDM_EGPU/TDM_EGPUMEM from the device. No run may be
 * in progress. */
int tdm_sched_prepare(tdm_sched *e, size_t max_tasks);

/* Answers queries[i] in results[i], blocking until all are done. Scratch memory
 * is kept between runs and grows only when a run needs more. Returns 0,
 * TDM_EINVAL (a query without a scene or poses, or contacts mode with
 * max_contacts 0: nothing is computed) or TDM_ENOMEM (results are then
 * undefined). */
int tdm_sched_run(tdm_sched *e, const tdm_sched_query *queries, size_t n, tdm_sched_result *results);
/* The same for n queries of one scene with their poses side by side: query i is
 * *proto with poses proto->poses + i * scene->n_movable (a client's request,
 * tandem check's poses). Answers as tdm_sched_run over those queries, with one
 * check of the query instead of one per pose and no array of queries to read.
 * proto->pairs must be NULL (each query would need its own room): TDM_EINVAL. */
int tdm_sched_run_poses(tdm_sched *e, const tdm_sched_query *proto, size_t n, tdm_sched_result *results);

/* The same for n configurations of a robot: proto->scene's movable objects are
 * kin's elements (kin->n_elems == scene->n_movable, in slot order; geom/kin.h),
 * configuration i is configs[i * kin->n_q ..], and query i's poses are
 * tdm_kin_elems of it. proto->poses is ignored; proto->pairs must be NULL.
 * With a GPU engine the batch runs on the device from end to end (forward
 * kinematics, culling, tasks, traversal, fold: n configurations in, n answers
 * out; TDM_ENGINE_DEVICE_CONFIGS=0 turns it off), else its poses are computed
 * on the pool and it runs as tdm_sched_run_poses; the answers are the same.
 * Returns 0, TDM_EINVAL (as tdm_sched_run_poses, or kin not matching the
 * scene), TDM_ENONFINITE (a NaN or infinite value: nothing is computed) or
 * TDM_ENOMEM. */
int tdm_sched_run_configs(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin, const double *configs,
                          size_t n, tdm_sched_result *results);
/* The same on the device only: TDM_ENODEV, with nothing answered, when the batch
 * does not run there (no GPU engine, the hybrid, the device path off, a tree not
 * resident, or the device failed); it ignores proto->work (the GPU engines count
 * no work). For callers that pool several clients' configurations into one run
 * and, should it not run on the device, run each on its own with its own work
 * account (workpile/pooler.c). Other errors as tdm_sched_run_configs. */
int tdm_sched_run_configs_device(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin,
                                 const double *configs, size_t n, tdm_sched_result *results);
/* Several robot scenes' configurations in one device run (pooled planners'
 * requests): groups[g] holds groups[g].n configurations, side by side in
 * configs in group order (every kin of the same n_q), answered in results in the
 * same order; mode and max_contacts as a query's, for all. As
 * tdm_sched_run_configs_device otherwise (TDM_ENODEV: nothing answered; a scene
 * with a tree not resident fails the whole run so). TDM_EINVAL for groups of
 * different n_q. */
typedef struct tdm_sched_configs_group {
    const tdm_scene *scene;
    const tdm_kin *kin;
    size_t n;
} tdm_sched_configs_group;
int tdm_sched_run_configs_groups_device(tdm_sched *e, const tdm_sched_configs_group *groups, size_t n_groups,
                                        uint32_t mode, uint32_t max_contacts, const double *configs,
                                        tdm_sched_result *results);
/* Asynchronous device runs of configurations (the pooler's async lanes): one thread keeps
 * several runs in flight on one lane's slots and polls them, instead of waiting for each.
 * A tdm_sched_async belongs to one thread. It holds a lane while a run is in flight; the
 * thread makes no other scheduler call that takes a lane meanwhile
 * (tdm_sched_async_drain first: with one lane it would wait for itself).
 *
 * tdm_sched_async_create: TDM_ENODEV without a device path for configurations.
 * tdm_sched_async_room: more runs it may start now (0: poll first).
 * tdm_sched_async_start: the groups as tdm_sched_run_configs_groups_device takes them (force
 *   0: when the cost model sends the run to the host, TDM_ENODEV), started as one run;
 *   the configurations are copied, the answers written into results when it ends. TDM_OK;
 *   TDM_EAGAIN: not now (no room, or a scene's program to upload while runs are in flight:
 *   tdm_sched_async_drain, then start again); TDM_ENODEV: not a run for this path (larger
 *   than one run, on the host, the device failed): drain, then run it the synchronous way;
 *   TDM_EINVAL, TDM_ENONFINITE: as tdm_sched_run_configs_groups_device, nothing started;
 *   TDM_ENOMEM.
 * tdm_sched_async_next: an ended run's tag (its results written; *rc TDM_OK, or TDM_ENODEV:
 *   nothing that counts answered, run it another way, or TDM_ENOMEM), the runs in the order
 *   they ended; NULL when none has ended. Does not wait, except for the lane's other runs
 *   when one could not answer all (the rest is run on the lane the synchronous way).
 * tdm_sched_async_drain: waits for every run in flight (ended runs stay for _next) and
 *   gives the lane back.
 * tdm_sched_async_destroy: drains first; ended runs not taken are dropped. */
typedef struct tdm_sched_async tdm_sched_async;
int tdm_sched_async_create(tdm_sched *e, tdm_sched_async **out);
void tdm_sched_async_destroy(tdm_sched_async *a);
int tdm_sched_async_room(const tdm_sched_async *a);
int tdm_sched_async_running(const tdm_sched_async *a);
int tdm_sched_async_start(tdm_sched_async *a, const tdm_sched_configs_group *groups, size_t n_groups, uint32_t mode,
                          uint32_t max_contacts, const double *configs, tdm_sched_result *results, int force,
                          void *tag);
void *tdm_sched_async_next(tdm_sched_async *a, int *rc);
void tdm_sched_async_drain(tdm_sched_async *a);
/* The same on the CPU engine, whatever the engines, on the caller's thread alone
 * (forward kinematics, culling, traversal; no pool thread woken), on a host lane
 * when the scheduler has any (else on one of the engines' lanes). For a few
 * configurations (a planner's single state), which it answers in the time a
 * device run takes to start (workpile/pooler.h, host lanes). Counts against
 * proto->work as the CPU engine does. Errors as tdm_sched_run_configs. */
int tdm_sched_run_configs_host(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin, const double *configs,
                               size_t n, tdm_sched_result *results);
/* 1 when batches of configurations run on the device (a GPU-resident engine, the
 * device path on), so that pooling them pays. */
int tdm_sched_configs_on_device(const tdm_sched *e);

/* The express ring (gpu/gpu.h; tandemd's --express-configs, 1 by default with a GPU engine): a few
 * configurations of one robot scene answered by the first GPU engine's resident kernel,
 * with no lane, no launch and no queue: submit publishes them, poll finds their answers.
 * A scene's program is built and uploaded at its first submit (its serial names it: the
 * scene's trees stay on the device while it lives); a robot too large for a block is
 * refused (TDM_EINVAL) and goes the pooled way. */
#define TDM_SCHED_EXPRESS_MAX 256u /* configurations a submit takes at most (a planner's motion rounds: tens of states) */
typedef struct tdm_sched_express {
    uint64_t ticket;
    uint32_t n, prog;
} tdm_sched_express;
/* Starts the ring with `blocks` resident blocks (0: off). TDM_ENODEV without a GPU-resident
 * engine (or with the hybrid), TDM_EGPU, TDM_EGPUMEM. Before any other call of this family,
 * from one thread. */
int tdm_sched_express_start(tdm_sched *e, uint32_t blocks);
/* 1 when started. */
int tdm_sched_express_on(const tdm_sched *e);
/* Publishes configs (n x kin->n_q values, finite, n <= TDM_SCHED_EXPRESS_MAX) of scene s in
 * mode (cap max_contacts in contacts mode) into *x. TDM_OK; TDM_EAGAIN (the ring is full
 * now), TDM_EINVAL (too large for it), TDM_ENODEV (not started, or its engine failed),
 * TDM_ECANCELED (a tree of s has no device copy), TDM_EGPU: nothing was published, run it
 * the pooled way. */
int tdm_sched_express_submit(tdm_sched *e, const tdm_scene *s, const tdm_kin *kin, const double *configs, size_t n,
                             uint32_t mode, uint32_t max_contacts, tdm_sched_express *x);
/* 1 with x's answers in results (as tdm_sched_run_configs gives them, for scene s and
 * mode), 0 while they are not all in, TDM_EAGAIN when one outgrew its block (results
 * undefined: run them the pooled way), TDM_EGPU when the kernel failed. After anything
 * but 0, x is done with. Any thread. */
int tdm_sched_express_poll(tdm_sched *e, tdm_sched_express *x, const tdm_scene *s, uint32_t mode,
                           tdm_sched_result *results);
/* Keeps the resident kernel running while configurations wait (the polling thread's
 * call, once a pass). */
void tdm_sched_express_keep(tdm_sched *e);

typedef struct tdm_sched_stats {
    uint64_t runs, queries, tasks;    /* tasks: (query, object pair) traversals, contacts re-runs included */
    uint64_t box_tests, tri_tests;    /* counted by the CPU engine only (the GPU engines do not count) */
    uint64_t cpu_queries, gpu_queries, hybrid_queries; /* which engine answered (a query's pair
                                                          re-run on the CPU is not counted again) */
    uint64_t cpu_tasks, gpu_tasks, hybrid_tasks;
    uint64_t gpu_iterations;          /* workpiles the GPU tested: BVTT levels of the GPU-resident engine
                                         (summed over its in-flight batches) plus the hybrid's workpiles */
    uint64_t gpu_pairs;               /* node pairs and leaf pairs in them: gpu_pairs / gpu_iterations
                                         is the mean workpile size */
    uint64_t gpu_small_runs;          /* GPU-resident runs started depth first (gpu.h small_tasks; configs
                                         runs of few entries), and of them those that handed pairs over */
    uint64_t gpu_small_handovers;
    uint64_t gpu_fused_runs;          /* GPU-resident configuration runs in one kernel (gpu/configs.cu) */
    uint64_t express_configs;         /* configurations the express ring answered, and those it gave back
                                         (outgrew a block: run the pooled way) */
    uint64_t express_overflows;
    uint64_t express_programs;        /* robot scene programs uploaded to it */
    uint64_t express_launches;        /* its resident kernel's launches */
    uint64_t async_runs;              /* device runs of configurations started asynchronously (tdm_sched_async),
                                         and the starts refused for want of an idle lane (a program to upload) */
    uint64_t async_waits;
    uint64_t device_bytes, mesh_bytes; /* device memory held now, summed over the GPU engines */
    uint64_t device_budget;           /* the device memory the engines may hold, summed (0: no GPU engine) */
    int gpu_broken;                   /* a GPU engine failed for good (TDM_EGPU: a sticky CUDA error): its
                                         runs go to the other engines, or to the CPU engine when none is
                                         left, and a restart is due to get it back */
    uint32_t device_meshes;           /* trees resident on each device (every engine holds every one) */
    uint64_t dispatch_threshold;      /* AUTO: runs of fewer tasks go to the CPU engine */
    double seconds, gpu_seconds;      /* wall time inside tdm_sched_run, and in its GPU parts */
    double config_prep_seconds;       /* configuration runs on the device: the host's time preparing their
                                         robot scenes' programs (lookups, checks, pairs), and starting them
                                         (packing and queueing the upload and launches) */
    double config_start_seconds;
    uint64_t gpu_programs_uploaded;   /* robot scenes' programs a GPU engine's lane uploaded to keep (gpu/gpu.h,
                                         "resident programs"), and runs' robot scenes it found there */
    uint64_t gpu_programs_reused;
    uint64_t gpu_program_bytes;       /* ... the bytes the lanes hold now */
    uint32_t gpu_engines;             /* GPU-resident engines, one per listed device (0: none) */
    uint32_t gpu_engines_broken;      /* ... of them failed for good */
    int gpu_engine_device[TDM_SCHED_MAX_GPUS];      /* engine k's CUDA device */
    uint64_t gpu_engine_tasks[TDM_SCHED_MAX_GPUS];  /* tasks engine k ran (the hybrid's: engine 0's) */
    uint64_t gpu_engine_runs[TDM_SCHED_MAX_GPUS];   /* runs on engine k's lanes (their GPU chunks ran there) */
    uint64_t gpu_engine_bytes[TDM_SCHED_MAX_GPUS];  /* device memory engine k holds: its copies and scratch */
} tdm_sched_stats;

/* A snapshot; safe to call from any thread. */
void tdm_sched_get_stats(tdm_sched *e, tdm_sched_stats *s);

#endif
