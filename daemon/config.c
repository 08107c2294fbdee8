#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "../workpile/sched.h"

typedef enum opt_type { T_U32, T_U64, T_INT, T_BOOL, T_STR, T_LIST, T_LEVEL } opt_type;

typedef struct opt {
    const char *name;
    opt_type type;
    size_t off;
    const char *def;     /* parsed like a flag's value; NULL: none */
    uint64_t min, max;   /* integers */
    const char *choices; /* strings with a fixed set of values, "a|b|c" */
    const char *meta;
    const char *help;
} opt;

#define OFF(f) offsetof(tdm_config, f)
#define U32MAX 4294967295u

static const opt opts[] = {
    {"listen", T_LIST, OFF(listen), NULL, 0, 0, NULL, "ADDR",
     "Address to listen on: HOST:PORT, [IPV6]:PORT or unix:PATH. Repeat for several. Default: "
     "127.0.0.1:7450 and unix:DATA_DIR/tandemd.sock."},
    {"data-dir", T_STR, OFF(data_dir), "./tandem-data", 0, 0, NULL, "DIR",
     "Where meshes (meshes/*.mesh) and scenes (scenes/*.scene) are stored, with the LOCK file and the "
     "default Unix socket. Created if missing; one tandemd per directory."},
    {"config", T_STR, OFF(config_file), NULL, 0, 0, NULL, "FILE",
     "JSON object of options by name, e.g. {\"max-queries\": 4096, \"listen\": [\"unix:/run/tandem.sock\"]}. "
     "Flags override it."},
    {"engine", T_STR, OFF(engine), "auto", 0, 0, "auto|cpu|gpu|hybrid", "KIND",
     "Query engine: auto (with a GPU, each batch goes to the CPU or the GPU-resident engine, whichever is "
     "faster for its size; without one, the CPU engine), cpu, gpu (GPU-resident traversal) or hybrid (CPU "
     "traversal, GPU box and triangle tests). gpu and hybrid fail start-up when the build or the machine has no "
     "usable GPU."},
    {"threads", T_INT, OFF(threads), "0", 0, 4096, NULL, "N",
     "Engine threads working on a batch, the dispatcher's included; 0: one per online core."},
    {"gpu-devices", T_STR, OFF(gpu_devices), "all", 0, 0, NULL, "LIST",
     "CUDA devices the GPU engines run on: all (every GPU of the host), or device indices separated by "
     "commas, e.g. 0,1 (at most 8). One GPU-resident engine per entry, each with its own engine-lanes "
     "lanes (streams, buffers) and its own copy of every resident mesh; batches are spread over them. An "
     "index may repeat: 0,0 runs two engines on GPU 0 (testing the multi-GPU path on one GPU). The hybrid "
     "engine uses the first device only. Ignored by --engine cpu."},
    {"gpu-device", T_INT, OFF(gpu_device), "none", 0, 1024, NULL, "N",
     "One CUDA device for the GPU engines: the same as --gpu-devices N (kept for older command lines); not "
     "together with a gpu-devices list. none: unset, gpu-devices decides."},
    {"gpu-memory", T_U64, OFF(gpu_memory), "0", 0, UINT64_MAX, NULL, "BYTES",
     "Device memory each GPU engine (one per gpu-devices entry) may hold, resident meshes and scratch "
     "together; 0: 80% of its device's memory (shared evenly by the engines of a device listed more than "
     "once). A MeshPut whose tree does not fit on every engine gets ERROR_NO_MEMORY and leaves nothing on "
     "any; a stored mesh that does not fit at start-up is kept and its scenes run on the CPU engine."},
    {"gpu-program-cache", T_U64, OFF(gpu_program_cache), "16777216", 0, UINT64_MAX, NULL, "BYTES",
     "Device memory each GPU engine lane keeps for robot scenes' programs between runs (the scenes it ran "
     "last, the least recently used out first; counted in gpu-memory), so that a planner's request names "
     "its scene's program instead of carrying it; 0: none kept, every run carries its programs."},
    {"gpu-streams", T_INT, OFF(gpu_streams), "2", 1, 8, NULL, "N",
     "Batches in flight on the GPU at once, each on its own CUDA stream."},
    {"gpu-traversal", T_STR, OFF(gpu_traversal), "pairs", 0, 0, "pairs|blocks|wide", "HOW",
     "How the GPU-resident engine's traversal maps threads to node pairs: pairs (one thread each; the faster "
     "on the scenes measured), blocks (four threads per pair of sibling blocks, sharing the node loads) or "
     "wide (the four-wide blocked hierarchy: sixteen threads per pair of blocks of four)."},
    {"engine-lanes", T_INT, OFF(engine_lanes), "3", 1, 8, NULL, "N",
     "Engine runs in flight at once per GPU engine (per gpu-devices entry; in all without a GPU), each with "
     "its own dispatcher thread and (with a GPU) its own streams and buffers: while one batch is on the GPU "
     "the next is being prepared and the last one's answers handed back. 1: one batch at a time per GPU."},
    {"engine-calibrate", T_BOOL, OFF(engine_calibrate), "1", 0, 1, "0|1", "BOOL",
     "auto with a GPU: time both engines at start-up to set the batch size from which the GPU is used "
     "(takes a moment); 0 keeps the built-in threshold. Also true/false, yes/no, on/off."},
    {"auth-token", T_STR, OFF(auth_token), "", 0, 0, NULL, "TOKEN",
     "Require Hello.auth_token to equal TOKEN (empty: no token; at least 22 characters otherwise). Visible "
     "in ps; prefer auth-token-file or $TANDEMD_AUTH_TOKEN (read when neither option gives one)."},
    {"auth-token-file", T_STR, OFF(auth_token_file), "", 0, 0, NULL, "FILE",
     "Read the auth token from the first line of FILE."},
    {"tenants-file", T_STR, OFF(tenants_file), "", 0, 0, NULL, "FILE",
     "Tenants, one a line: NAME TOKEN (# comments and blank lines skipped; names of letters, digits, '.', "
     "'_', '-'; tokens of at least 22 characters, all distinct). A Hello's token selects its tenant, which "
     "lists, uses and deletes only its own meshes, scenes and robots; Unix-socket clients that give no "
     "token are the tenant uid:N of their user. A tenant named default owns what was stored without one. "
     "Not with auth-token. Empty: every client is the one default tenant."},
    {"auth-fail-max", T_U32, OFF(auth_fail_max), "10", 0, 1u << 20, NULL, "N",
     "Wrong auth tokens from one address (one Unix user) within auth-fail-window seconds after which its "
     "Hellos are refused for auth-fail-block seconds, with a right token too (0: never)."},
    {"auth-fail-window", T_U32, OFF(auth_fail_window), "60", 1, 86400, NULL, "SECONDS",
     "The window auth-fail-max counts wrong tokens in."},
    {"auth-fail-block", T_U32, OFF(auth_fail_block), "60", 1, 86400, NULL, "SECONDS",
     "How long an address that reached auth-fail-max is refused."},
    {"auth-fail-addresses", T_U32, OFF(auth_fail_addresses), "4096", 1, 1u << 20, NULL, "N",
     "Addresses whose wrong tokens are counted at once; when full, the one heard from longest ago is "
     "forgotten."},
    {"insecure-listen", T_BOOL, OFF(insecure_listen), "0", 0, 1, "0|1", "BOOL",
     "Without an auth token, a TCP listen address other than loopback (127.0.0.0/8, ::1) is refused at "
     "start-up, since anyone who reaches it could use and delete everything; 1 accepts it."},
    {"tls-cert", T_STR, OFF(tls_cert), "", 0, 0, NULL, "FILE",
     "PEM certificate (chain) of the server: every TCP listener then speaks TLS (1.2 or later, 1.3 when the "
     "client has it; OpenSSL's default ciphers), and Unix sockets stay plain. Needs tls-key. Clients connect "
     "to tls://HOST:PORT. Read once at start-up."},
    {"tls-key", T_STR, OFF(tls_key), "", 0, 0, NULL, "FILE", "PEM private key of tls-cert."},
    {"tls-ca", T_STR, OFF(tls_ca), "", 0, 0, NULL, "FILE",
     "PEM CA certificates: with it, a TLS client must present a certificate that chains to one of them "
     "(mutual TLS); empty: no client certificate asked. Needs tls-cert."},
    {"unix-socket-group", T_BOOL, OFF(unix_socket_group), "0", 0, 1, "0|1", "BOOL",
     "Unix sockets (--listen unix:PATH) are created 0600, for their owner only, whatever the umask; 1 makes "
     "them 0660, for the owner's group too."},
    {"log-level", T_LEVEL, OFF(log_level), "info", 0, 0, "error|warn|info|debug", "LEVEL",
     "Least severe messages logged to stderr."},
    {"max-frame-bytes", T_U32, OFF(max_frame_bytes), "67108864", 64, U32MAX, NULL, "BYTES",
     "Largest frame accepted (length prefix excluded); a longer one closes the connection."},
    {"max-vertices", T_U32, OFF(max_vertices), "4194304", 3, 1u << 30, NULL, "N", "Vertices per mesh."},
    {"max-triangles", T_U32, OFF(max_triangles), "4194304", 1, 1u << 30, NULL, "N", "Triangles per mesh."},
    {"max-objects", T_U32, OFF(max_objects), "1024", 1, 16384, NULL, "N", "Objects per scene."},
    {"max-scene-triangles", T_U32, OFF(max_scene_triangles), "4194304", 1, 1u << 30, NULL, "N",
     "Triangles of a RobotScenePut's attached and world shapes together, curved primitives as tessellated "
     "(within 0.1 mm): a scene over it is refused while it is built, having cost at most this and one shape."},
    {"max-robot-triangles", T_U32, OFF(max_robot_triangles), "4194304", 1, 1u << 30, NULL, "N",
     "Triangles of a robot's collision elements together (one tree per distinct mesh and scale, or primitive), "
     "counted as they are built, at its first RobotScenePut, which is refused when they are over it. A RobotPut "
     "whose distinct meshes (each stored mesh at each scale once) alone are over it is refused before "
     "anything is stored."},
    {"max-queries", T_U32, OFF(max_queries), "65536", 1, 1u << 24, NULL, "N", "Queries (poses) per Query request."},
    {"max-contacts", T_U32, OFF(max_contacts), "1000000", 1, U32MAX - 1, NULL, "N",
     "Largest Query.max_contacts, and the cap used when a Query asks for 0."},
    {"max-robots", T_U32, OFF(max_robots), "1024", 1, 1u << 20, NULL, "N", "Robots stored at once (RobotPut)."},
    {"max-robot-text-bytes", T_U32, OFF(max_robot_text_bytes), "16777216", 1024, 64u << 20, NULL, "BYTES",
     "Bytes of text in a RobotPut's urdf and in its srdf, and in a RobotScenePut's world (each)."},
    {"max-motion-states", T_U64, OFF(max_motion_states), "268435456", 1, UINT64_MAX, NULL, "N",
     "States of all the motions of one MotionCheck together (each motion's count by its resolution)."},
    {"io-threads", T_U32, OFF(io_threads), "3", 0, 64, NULL, "N",
     "Event loops on threads of their own that take the client connections (round robin), each reading, "
     "decoding and answering its connections' requests; the main loop keeps the listeners and the rest. "
     "0: the main loop serves every connection; with many clients sending small requests (planners) one "
     "loop is then the daemon's bound (daemon/io.h)."},
    {"cpu-latency-us", T_INT, OFF(cpu_latency_us), "off", 0, 1000000, NULL, "US",
     "While it runs, tandemd holds the host's CPU wake-up latency limit (Linux PM QoS, /dev/cpu_dma_latency) "
     "at this many microseconds, so that idle cores stay in shallow idle states: a client thread woken by "
     "a reply, or a thread of tandemd woken by a request, may get a core sooner (64 planners on a 16-core "
     "host: +0-4 % problems/s in three rounds, +8 % in one; bench/results/ompl_resident.md, section 21). "
     "It applies to the whole host and costs idle power, as tuned's latency-performance profile does. "
     "Needs write access to /dev/cpu_dma_latency (root, or a udev rule for tandemd's group); start-up "
     "fails, naming the file, without it. off: the host's setting is left alone."},
    {"loop-spin-us", T_INT, OFF(loop_spin_us), "auto", 0, 1000000, NULL, "US",
     "How long an event loop polls for its connections' next bytes after their last read before it sleeps "
     "in epoll (it holds a core meanwhile; an idle daemon's loops sleep). A sleeping loop costs the next "
     "request a thread wake-up. auto: 200 with a GPU engine (as --dispatch-poll-us), 0 without; 0: sleep at once."},
    {"build-threads", T_INT, OFF(build_threads), "auto", 1, 64, NULL, "N",
     "Threads that build a large MeshPut's tree (8Ki triangles or more, on the writer's builder; the same "
     "tree whatever the number: subtrees of 16Ki triangles or more split between them). auto: a quarter "
     "of the cores, 1 to 8."},
    {"reply-threads", T_INT, OFF(reply_threads), "auto", 0, 16, NULL, "N",
     "Threads that write the replies of queries to their clients' sockets, so that the threads running the "
     "engine go on to their next batch (each write wakes a client: a few microseconds). Idle, they poll as "
     "long as --dispatch-poll-us before they sleep. auto: 2 with a GPU engine, 0 without; 0: the engine's "
     "threads write their batches' replies themselves."},
    {"max-pipelined", T_U32, OFF(max_pipelined), "1024", 1, 1u << 20, NULL, "N",
     "Requests in flight per connection before the server stops reading from it."},
    {"max-connections", T_U32, OFF(max_connections), "1024", 1, 1u << 20, NULL, "N",
     "Open client connections; one more gets ERROR_BUSY and is closed."},
    {"max-meshes-bytes", T_U64, OFF(max_meshes_bytes), "8G", 0, UINT64_MAX, NULL, "BYTES",
     "Total size of stored meshes and their trees; a MeshPut over it gets ERROR_NO_MEMORY."},
    {"max-output-bytes", T_U64, OFF(max_output_bytes), "64M", 4096, UINT64_MAX, NULL, "BYTES",
     "Reply bytes per connection: those queued and not yet written, plus what its queries still being "
     "computed hold and a bound on their replies. Above it the server stops reading from the connection, "
     "so it starts none of its new work, until the sum is below half of it (nothing is dropped)."},
    {"max-output-bytes-hard", T_U64, OFF(max_output_bytes_hard), "256M", 4096, UINT64_MAX, NULL, "BYTES",
     "Queued reply bytes per connection above which the connection is closed (as Redis's "
     "client-output-buffer-limit); max-output-bytes keeps well-behaved clients far below it, so only a "
     "single reply larger than the difference can reach it."},
    {"output-stall-timeout", T_U32, OFF(output_stall_timeout), "60", 0, 1u << 30, NULL, "SECONDS",
     "A connection with replies waiting to be written that takes none of their bytes for this long (a "
     "client that stopped reading) is closed and its replies freed (0: never)."},
    {"max-upload-bytes", T_U64, OFF(max_upload_bytes), "1G", 0, UINT64_MAX, NULL, "BYTES",
     "Decoded MeshPut, ScenePut, RobotPut and RobotScenePut requests waiting to be validated and stored, "
     "over all connections, with a bound on a mesh tree's build memory; one that would go over it gets "
     "ERROR_BUSY (one is always accepted when none is waiting)."},
    {"max-input-bytes", T_U64, OFF(max_input_bytes), "512M", 65536, UINT64_MAX, NULL, "BYTES",
     "Partial frames held for all connections together (each connection's 64 KiB staging buffer, and the "
     "buffer of a frame larger than that, growing as its bytes arrive). A frame whose buffer would go "
     "over it gets ERROR_BUSY and its connection is closed."},
    {"max-ring-bytes", T_U32, OFF(max_ring_bytes), "4M", 0, 1u << 30, NULL, "BYTES",
     "Largest shared-memory ring a client on the Unix socket may open (RingOpen: a request ring and a "
     "reply ring of this size at most, 256 KiB when it asks for none, at least 64 KiB; the mapping counts "
     "against max-ring-memory and max-memory while the connection lasts). 0: no rings "
     "offered. In HelloReply.limits."},
    {"max-ring-memory", T_U64, OFF(max_ring_memory), "512M", 65536, UINT64_MAX, NULL, "BYTES",
     "Shared memory the rings of all same-host connections may map together (each connection's 4 KiB "
     "header and two rings, while it lasts; counted in max-memory too). A RingOpen past it gets ERROR_BUSY "
     "and its connection stays on the socket. Not in HelloReply.limits."},
    {"ring-park-us", T_U32, OFF(ring_park_us), "10000", 0, 60000000, NULL, "US",
     "How long a connection's shared-memory rings may go without a request before its loop stops "
     "polling them (they are parked: the client's next request then rings the doorbell, one byte on "
     "the socket, and brings them back), so that idle same-host clients cost the loops' turns nothing. "
     "0: never parked."},
    {"max-memory", T_U64, OFF(max_memory), "0", 0, UINT64_MAX, NULL, "BYTES",
     "Everything clients make the daemon hold, together: partial frames, queued replies, queries accepted "
     "and not yet answered (their memory and a bound on their replies) and uploads waiting to be stored "
     "(stored meshes are bounded by max-meshes-bytes, not here). A Query, MotionCheck, upload or large "
     "frame that would pass it gets ERROR_BUSY; nothing accepted is dropped. 0: half of the machine's "
     "physical memory, or of the cgroup's memory limit (a container's) when that is lower."},
    {"max-reply-pairs", T_U32, OFF(max_reply_pairs), "1000000", 0, U32MAX, NULL, "N",
     "Contact pairs one Query reply may carry: want_pairs needs queries x max_contacts <= N, else "
     "ERROR_LIMIT. In HelloReply.limits."},
    {"max-query-tasks", T_U64, OFF(max_query_tasks), "16777216", 1, UINT64_MAX, NULL, "N",
     "Work per Query request: queries x checked object pairs of the scene; over it is ERROR_LIMIT. In "
     "HelloReply.limits."},
    {"max-batch-tasks", T_U32, OFF(max_batch_tasks), "1048576", 1, 1u << 30, NULL, "N",
     "Object-pair tasks per engine run: queued Query requests are pooled into one run up to this many "
     "(a larger request runs alone, in pieces of this size), counting every checked pair of a query "
     "before culling. Bounds the engine's scratch memory (about 170 bytes per task, per lane, as "
     "runs that large come). Robot scenes pool best with large runs: culling keeps about a tenth of "
     "a Panda's pairs (bench/results/robot_server_gpu.md)."},
    {"max-query-work", T_U64, OFF(max_query_work), "100000000", 0, UINT64_MAX, NULL, "N",
     "Box and triangle tests one query (a pose, a configuration, a motion's state) may cost, counted by "
     "the CPU engine as it goes (0: no budget). A request of N queries may cost N times this; past it, "
     "its traversals stop and it is answered ERROR_WORK_BUDGET. 1e8 tests are ~1-3 s of one core. In "
     "HelloReply.limits."},
    {"device-configs-min", T_U32, OFF(device_configs_min), "256", 0, 1u << 24, NULL, "N",
     "A Query of at least this many robot configurations (without want_pairs), and a MotionCheck's batch of "
     "at least this many states, goes to the engine as configurations: with a GPU engine their forward "
     "kinematics, culling and tasks run on the device, and jobs of configurations are pooled with each "
     "other (any robot scenes with as many joints: one device run). Smaller ones get their poses made "
     "here and pool with every other request (0: never as configurations; see also "
     "--device-configs-small)."},
    {"device-configs-small", T_U32, OFF(device_configs_small), "1", 0, 1, NULL, "0|1",
     "1: when the engine runs configurations on the device (a GPU engine), every Query of robot "
     "configurations (without want_pairs) and every MotionCheck batch goes as configurations, whatever "
     "its size (--device-configs-min 0 still turns them off), so that planners' small requests of many "
     "robot scenes pool into one "
     "device run (forward kinematics, culling and task listing on the device, not on this host's "
     "threads). 0: only from --device-configs-min on. Without such an engine it changes nothing."},
    {"motion-window", T_U32, OFF(motion_window), "0", 0, 1u << 20, NULL, "N",
     "States each motion of a MotionCheck gives to its first batch, in order from its start; a motion "
     "not answered by then gives twice as many in the next, and so on (early exit: states past the "
     "first collision are mostly never checked). Larger windows answer a motion in fewer dependent "
     "engine runs, smaller ones check fewer states past its first collision. 0: 16 with the CPU engine, "
     "64 with a GPU engine (a GPU run costs about the same for tens or hundreds of states)."},
    {"motion-probes", T_U32, OFF(motion_probes), "4", 0, 16, NULL, "N",
     "A MotionCheck with any_state (any colliding state answers: a planner's plain validity check) "
     "first checks N states of each motion, coarse to fine: the end, the middle, the quarters, ... "
     "(as OMPL's DiscreteMotionValidator). Most colliding planner motions collide at one of them, "
     "and such a first batch of a few states is answered at once on a host lane (--host-lanes); "
     "the motion's other states follow in order, in windows of twice --motion-window, then "
     "doubling. 0: any_state checks first to last, as without it."},
    {"slice-tasks", T_U64, OFF(slice_tasks), "0", 0, UINT64_MAX, NULL, "N",
     "A request of more tasks than this runs this many at a time, taking turns with the other requests "
     "queued (0: max-batch-tasks)."},
    {"share-by", T_STR, OFF(share_by), "auto", 0, 0, "auto|connection|tenant|off", "WHO",
     "Who takes turns for the engine lanes and the tree builder: the requests that the latency lane does not take wait in a "
     "queue per connection or per tenant, and each lane's next run starts with whoever has had the least "
     "work lately (start-time fair queueing, weighted by tasks), so that one client's flood of requests "
     "delays another's by about one turn each rather than by everything queued before it; large "
     "MeshPuts take turns for the tree builder the same way (whoever's turn came longest ago). auto: "
     "tenant with a tenants-file, else connection; off: first come, first served."},
    {"latency-lane-tasks", T_U64, OFF(latency_lane_tasks), "256", 0, UINT64_MAX, NULL, "N",
     "Requests of at most this many tasks are small: with two or more engine lanes, one lane runs only "
     "those, so a small request never waits behind large ones (0: no latency lane)."},
    {"latency-lane-work", T_U64, OFF(latency_lane_work), "262144", 0, UINT64_MAX, NULL, "N",
     "Box and triangle tests a small request may cost on the latency lane; one that needs more is run "
     "again on the other lanes, so the small requests behind it wait no longer (0: no cut)."},
    {"dispatch-poll-us", T_INT, OFF(dispatch_poll_us), "auto", 0, 1000000, NULL, "US",
     "How long an idle dispatcher or host thread polls for work before it sleeps (a sleeping one costs "
     "the next request a wake-up, a system call on the loop); while it polls it holds a core. auto: 200 "
     "with a GPU engine (its lanes spin on the device anyway), 0 without; 0: sleep at once."},
    {"host-lanes", T_INT, OFF(host_lanes), "2", 0, 8, NULL, "N",
     "Threads beside the engine lanes that answer requests of at most host-configs robot configurations "
     "(a planner's state, a short motion's states) on the CPU engine, each request alone and at once on "
     "one thread, whatever the engine: there it costs tens of microseconds a configuration, less than a "
     "GPU run takes to start, and it waits for no GPU run. 0: none (such requests pool with the others)."},
    {"host-configs", T_U32, OFF(host_configs), "8", 0, 65536, NULL, "N",
     "The largest request (in configurations: a Query's, or a MotionCheck round's states) the host-lanes "
     "threads take; 0: none."},
    {"express-configs", T_INT, OFF(express_configs), "auto", 0, TDM_SCHED_EXPRESS_MAX, NULL, "N",
     "Requests of at most N robot configurations (a Query's, or a MotionCheck round's states) that no "
     "host-lanes thread takes go straight to the GPU's express ring, a resident kernel that takes them "
     "from mapped memory with no batch, launch or queue (workpile/sched.h); one that outgrows a block "
     "runs the usual way. auto: 1 with a GPU engine (a planner's single states), 0 without; a number "
     "other than 0 needs a GPU engine (else ignored, with a warning). 0: off."},
    {"express-blocks", T_U32, OFF(express_blocks), "16", 1, 1024, NULL, "N",
     "The express ring's resident blocks (configurations in work at once), with express-configs. Two "
     "launches of them overlap while the ring is busy, and they hold their SMs for their life (2 ms): "
     "more than the device holds at once (said at start; 528 on an H200) leaves the lanes' runs waiting "
     "for room."},
    {"max-name-bytes", T_U32, OFF(max_name_bytes), "1024", 0, 1u << 20, NULL, "BYTES",
     "Longest mesh, scene or client name (UTF-8)."},
    {"shutdown-timeout", T_U32, OFF(shutdown_timeout), "30", 0, 86400, NULL, "SECONDS",
     "On SIGINT/SIGTERM, how long to wait for in-flight requests before closing connections "
     "(a second signal closes them at once)."},
    {"hello-timeout", T_U32, OFF(hello_timeout), "5", 0, 86400, NULL, "SECONDS",
     "A connection that has not said Hello this long after it was accepted is closed (0: no limit), so "
     "sockets that never speak cannot hold the connection slots."},
    {"max-unauthenticated", T_U32, OFF(max_unauthenticated), "256", 1, 1u << 20, NULL, "N",
     "Connections that have not said Hello yet, at once (they also count in max-connections): more are "
     "refused with ERROR_BUSY, so that sockets that never speak cannot take the slots of clients that do."},
    {"max-connections-per-address", T_U32, OFF(max_per_address), "256", 0, 1u << 20, NULL, "N",
     "TCP connections from one peer address at once (0: no limit); more are refused with ERROR_BUSY. "
     "Unix-socket connections are not counted."},
    {"max-ephemeral-scenes", T_U32, OFF(max_ephemeral), "4096", 1, 1u << 24, NULL, "N",
     "Ephemeral scenes one connection holds at once (each put of one holds it until the connection "
     "closes or deletes it): a put of another is refused with ERROR_LIMIT (checked as the put arrives, so "
     "pipelined puts may pass it by their number). It bounds what a connection's close drops at once."},
    {"idle-timeout", T_U32, OFF(idle_timeout), "600", 0, 1u << 30, NULL, "SECONDS",
     "A connection that sends nothing this long, with no request in flight and no reply waiting to be "
     "written, is closed (0: no limit)."},
    {"metrics-listen", T_STR, OFF(metrics_listen), "", 0, 0, NULL, "ADDR",
     "Serve Prometheus metrics (GET /metrics) and the probes GET /healthz and GET /readyz over HTTP on "
     "HOST:PORT or [IPV6]:PORT (port 0: any free one, logged); empty: off. Give a loopback address unless "
     "something else must scrape it (a Kubernetes kubelet: the pod's address); it serves counts only, no "
     "names, ids or tokens. deploy/README.md lists the metrics."},
    {"metrics-interval", T_U32, OFF(metrics_interval), "1000", 10, 60000, NULL, "MS",
     "How often the event loop publishes the gauges of /metrics and the readiness of /readyz, stamps the "
     "heartbeat /healthz checks and pings systemd's watchdog (WatchdogSec), in milliseconds."},
    {"health-loop-timeout", T_U32, OFF(health_loop_timeout), "10", 1, 3600, NULL, "SECONDS",
     "GET /healthz fails (503) once the event loop has not published for this long: a loop stuck on "
     "something is a dead server even if the process runs."},
    {"exit-on-gpu-failure", T_BOOL, OFF(exit_on_gpu_failure), "1", 0, 1, "0|1", "BOOL",
     "After a sticky CUDA error (the GPU context is lost; queries fall back to the CPU engine, or to the "
     "other GPU engines with several gpu-devices) /readyz fails at once; 1: shut down gracefully and exit with status 3 for the supervisor (systemd, Kubernetes) "
     "to restart tandemd with a fresh context; 0: keep serving on the CPU engine, not ready, until restarted "
     "by hand."},
};
#define N_OPTS (sizeof opts / sizeof opts[0])

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const opt *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTS; i++) {
        const char *n = opts[i].name;
        size_t k = 0;
        for (; k < len && n[k]; k++) {
            char ch = name[k] == '_' ? '-' : name[k];
            if (ch != n[k]) break;
        }
        if (k == len && n[k] == 0) return &opts[i];
    }
    return NULL;
}

/* Integers with an optional K, M, G or T suffix (powers of 1024). */
static int parse_uint(const char *s, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+' || *s == ' ') return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    unsigned shift = 0;
    switch (*end) {
    case 0: break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (*end == 'i') end++;
    if (*end == 'B') end++;
    if (*end) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int in_choices(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int list_add(tdm_config *c, const char *v)
{
    char **l = realloc(c->listen, (c->n_listen + 1) * sizeof *l);
    if (!l) return -1;
    c->listen = l;
    if (!(l[c->n_listen] = dupstr(v))) return -1;
    c->n_listen++;
    return 0;
}

static void list_clear(tdm_config *c)
{
    for (size_t i = 0; i < c->n_listen; i++) free(c->listen[i]);
    free(c->listen);
    c->listen = NULL;
    c->n_listen = 0;
}

/* Sets one option from text. `where` names the source for messages. */
static int set_opt(tdm_config *c, const opt *o, const char *v, const char *where, char *err, size_t errlen)
{
    char *base = (char *)c;
    switch (o->type) {
    case T_U32:
    case T_U64:
    case T_INT: {
        if (o->off == OFF(gpu_device) && strcmp(v, "none") == 0) { /* integer options that may be unset */
            c->gpu_device = -1;
            return 0;
        }
        if (o->type == T_INT && o->def && (!strcmp(o->def, "auto") || !strcmp(o->def, "off")) && !strcmp(v, o->def)) {
            *(int *)(base + o->off) = -1; /* an integer option whose default is auto (or off): -1, resolved in main.c */
            return 0;
        }
        uint64_t x;
        if (parse_uint(v, &x) != 0 || x < o->min || x > o->max)
            return errf(err, errlen, "%s: %s must be an integer from %" PRIu64 " to %" PRIu64 " (K, M, G suffixes "
                        "allowed), not \"%s\"", where, o->name, o->min, o->max, v);
        if (o->type == T_U32) *(uint32_t *)(base + o->off) = (uint32_t)x;
        else if (o->type == T_U64) *(uint64_t *)(base + o->off) = x;
        else *(int *)(base + o->off) = (int)x;
        return 0;
    }
    case T_BOOL: {
        int b;
        if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on")) b = 1;
        else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off")) b = 0;
        else return errf(err, errlen, "%s: %s must be 0 or 1 (or true/false, yes/no, on/off), not \"%s\"", where,
                         o->name, v);
        *(int *)(base + o->off) = b;
        return 0;
    }
    case T_STR: {
        if (o->choices && !in_choices(o->choices, v))
            return errf(err, errlen, "%s: %s must be one of %s, not \"%s\"", where, o->name, o->choices, v);
        char *d = dupstr(v);
        if (!d) return errf(err, errlen, "out of memory");
        char **slot = (char **)(base + o->off);
        free(*slot);
        *slot = d;
        return 0;
    }
    case T_LEVEL: {
        tdm_log_level l;
        if (tdm_log_level_parse(v, &l) != 0)
            return errf(err, errlen, "%s: %s must be one of %s, not \"%s\"", where, o->name, o->choices, v);
        *(int *)(base + o->off) = (int)l;
        return 0;
    }
    case T_LIST:
        if (!*v) return errf(err, errlen, "%s: %s must not be empty", where, o->name);
        if (list_add(c, v) != 0) return errf(err, errlen, "out of memory");
        return 0;
    }
    return errf(err, errlen, "internal: option type");
}

static int load_file(tdm_config *c, const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (je.line > 0) return errf(err, errlen, "config file %s, line %d: %s", path, je.line, je.text);
        return errf(err, errlen, "config file %s: %s", path, je.text);
    }
    int rc = 0;
    char where[600];
    snprintf(where, sizeof where, "config file %s", path);
    if (!json_is_object(root)) {
        rc = errf(err, errlen, "%s: must hold a JSON object", where);
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        const opt *o = find_opt(key, strlen(key));
        if (!o) {
            rc = errf(err, errlen, "%s: unknown option \"%s\" (tandemd --help lists them)", where, key);
            goto out;
        }
        if (o->off == OFF(config_file)) {
            rc = errf(err, errlen, "%s: \"config\" cannot be set from a config file", where);
            goto out;
        }
        char num[32];
        if (o->type == T_LIST) {
            list_clear(c);
            if (json_is_string(val)) {
                rc = set_opt(c, o, json_string_value(val), where, err, errlen);
            } else if (json_is_array(val)) {
                size_t i;
                json_t *it;
                json_array_foreach(val, i, it) {
                    if (!json_is_string(it)) {
                        rc = errf(err, errlen, "%s: %s[%zu] must be a string", where, o->name, i);
                        goto out;
                    }
                    if ((rc = set_opt(c, o, json_string_value(it), where, err, errlen)) != 0) goto out;
                }
            } else {
                rc = errf(err, errlen, "%s: %s must be a string or an array of strings", where, o->name);
            }
        } else if (json_is_string(val)) {
            rc = set_opt(c, o, json_string_value(val), where, err, errlen);
        } else if (json_is_boolean(val) && o->type == T_BOOL) {
            rc = set_opt(c, o, json_is_true(val) ? "1" : "0", where, err, errlen);
        } else if (json_is_integer(val) && o->type != T_STR && o->type != T_LEVEL) {
            if (json_integer_value(val) < 0) {
                rc = errf(err, errlen, "%s: %s must not be negative", where, o->name);
                goto out;
            }
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(val));
            rc = set_opt(c, o, num, where, err, errlen);
        } else {
            rc = errf(err, errlen, "%s: %s must be %s", where, o->name,
                      o->type == T_STR || o->type == T_LEVEL ? "a string"
                      : o->type == T_BOOL                    ? "true, false, 0 or 1"
                                                             : "an integer");
        }
        if (rc != 0) goto out;
    }
out:
    json_decref(root);
    return rc;
}

/* The first line of the token file, without its line ending. */
static int read_token_file(tdm_config *c, char *err, size_t errlen)
{
    FILE *f = fopen(c->auth_token_file, "r");
    if (!f) return errf(err, errlen, "auth-token-file %s: %s", c->auth_token_file, strerror(errno));
    char buf[4096];
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = 0;
    if (!buf[0]) return errf(err, errlen, "auth-token-file %s: the first line is empty", c->auth_token_file);
    free(c->auth_token);
    if (!(c->auth_token = dupstr(buf))) return errf(err, errlen, "out of memory");
    return 0;
}

static void print_version(void) { printf("tandemd %s (protocol 1)\n", TDM_VERSION); }

int tdm_config_load(tdm_config *c, int argc, char **argv, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_OPTS; i++)
        if (opts[i].def && set_opt(c, &opts[i], opts[i].def, "default", err, errlen) != 0) return -1;

    /* First pass: --help, --version, --config; and every flag's syntax. */
    const char *config_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            tdm_config_usage(stdout);
            return 1;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            print_version();
            return 1;
        }
        if (strncmp(a, "--", 2) != 0)
            return errf(err, errlen, "unexpected argument \"%s\" (tandemd --help lists the options)", a);
        const char *eq = strchr(a + 2, '=');
        const opt *o = find_opt(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
        if (!o) return errf(err, errlen, "unknown option \"%s\" (tandemd --help lists them)", a);
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) return errf(err, errlen, "option --%s needs a value", o->name);
        if (o->off == OFF(config_file)) config_path = v;
    }
    if (config_path && load_file(c, config_path, err, errlen) != 0) return -1;

    int listen_from_flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a + 2, '=');
        const opt *o = find_opt(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
        const char *v = eq ? eq + 1 : argv[++i];
        if (o->type == T_LIST && !listen_from_flags) {
            list_clear(c); /* flags replace the file's list */
            listen_from_flags = 1;
        }
        if (set_opt(c, o, v, "flag", err, errlen) != 0) return -1;
    }
    if (c->auth_token_file && c->auth_token_file[0] && read_token_file(c, err, errlen) != 0) return -1;
    const char *env_token = getenv("TANDEMD_AUTH_TOKEN");
    if (!c->auth_token[0] && env_token && env_token[0]) { /* flags and the file come first */
        free(c->auth_token);
        if (!(c->auth_token = dupstr(env_token))) return errf(err, errlen, "out of memory");
    }
    if (c->auth_token[0] && strlen(c->auth_token) < TDM_AUTH_TOKEN_MIN)
        return errf(err, errlen,
                    "the auth token has %zu characters: at least %d are needed (128 bits, e.g. `openssl rand "
                    "-base64 16`)",
                    strlen(c->auth_token), TDM_AUTH_TOKEN_MIN);
    if (c->auth_token[0] && c->tenants_file[0])
        return errf(err, errlen,
                    "an auth token (auth-token, auth-token-file or $TANDEMD_AUTH_TOKEN) and a tenants file were "
                    "both given: give the default tenant a line `default TOKEN` in the tenants file instead");
    if (c->n_listen == 0) {
        size_t n = strlen(c->data_dir) + 32;
        char *sock = malloc(n);
        if (!sock) return errf(err, errlen, "out of memory");
        snprintf(sock, n, "unix:%s/tandemd.sock", c->data_dir);
        int rc = list_add(c, "127.0.0.1:7450") || list_add(c, sock);
        free(sock);
        if (rc) return errf(err, errlen, "out of memory");
    }
    if (!c->data_dir[0]) return errf(err, errlen, "data-dir must not be empty");
    if (!c->tls_cert[0] != !c->tls_key[0])
        return errf(err, errlen, "%s is set but %s is not: TLS needs both the certificate and its key",
                    c->tls_cert[0] ? "tls-cert" : "tls-key", c->tls_cert[0] ? "tls-key" : "tls-cert");
    if (c->tls_ca[0] && !c->tls_cert[0])
        return errf(err, errlen, "tls-ca is set but tls-cert is not: client certificates need TLS");
    int devices[TDM_SCHED_MAX_GPUS], n_devices = 0;
    char why[200];
    if (tdm_sched_devices_parse(c->gpu_devices, devices, &n_devices, why, sizeof why) != TDM_OK)
        return errf(err, errlen, "gpu-devices: %s", why);
    if (c->gpu_device >= 0 && n_devices > 0)
        return errf(err, errlen, "gpu-device (%d) and gpu-devices (%s) were both given: give the one device as "
                    "--gpu-devices %d", c->gpu_device, c->gpu_devices, c->gpu_device);
    if (c->max_ring_bytes && c->max_ring_bytes < 65536)
        return errf(err, errlen, "max-ring-bytes (%u) is below 65536 (64 KiB, the smallest ring); 0 offers none",
                    c->max_ring_bytes);
    if (c->max_output_bytes_hard < c->max_output_bytes)
        return errf(err, errlen, "max-output-bytes-hard (%llu) is below max-output-bytes (%llu)",
                    (unsigned long long)c->max_output_bytes_hard, (unsigned long long)c->max_output_bytes);
    return 0;
}

void tdm_config_free(tdm_config *c)
{
    list_clear(c);
    free(c->data_dir);
    free(c->config_file);
    free(c->engine);
    free(c->gpu_traversal);
    free(c->share_by);
    free(c->gpu_devices);
    free(c->auth_token);
    free(c->auth_token_file);
    free(c->tls_cert);
    free(c->tls_key);
    free(c->tls_ca);
    free(c->tenants_file);
    free(c->metrics_listen);
    memset(c, 0, sizeof *c);
}

/* Prints `text` wrapped at 100 columns, each line indented by `indent`. */
static void wrap(FILE *f, const char *text, int indent)
{
    const int width = 100;
    int col = indent;
    fprintf(f, "%*s", indent, "");
    const char *p = text;
    while (*p) {
        const char *sp = strchr(p, ' ');
        int len = sp ? (int)(sp - p) : (int)strlen(p);
        if (col > indent && col + 1 + len > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, (size_t)len, f);
        col += len;
        p += len;
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}

void tdm_config_usage(FILE *f)
{
    fprintf(f, "usage: tandemd [--listen ADDR]... [--data-dir DIR] [--config FILE] [options]\n\n"
               "Tandem's collision server: stores meshes and scenes, answers pose queries (proto/README.md).\n"
               "Every option is also a key of the --config JSON file; flags override the file.\n"
               "Integers take K, M, G, T suffixes (powers of 1024).\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt *o = &opts[i];
        fprintf(f, "  --%s %s", o->name, o->meta);
        if (o->def && o->type != T_LIST) fprintf(f, "   (default: %s)", o->def[0] ? o->def : "\"\"");
        if (o->choices) fprintf(f, "   [%s]", o->choices);
        fputc('\n', f);
        wrap(f, o->help, 6);
    }
    fprintf(f, "  -h, --help\n      This text.\n  -V, --version\n      The server and protocol versions.\n\n");
    wrap(f, "Limits: max-frame-bytes, max-vertices, max-triangles, max-objects, max-queries, max-contacts, "
            "max-pipelined, max-connections, max-meshes-bytes, max-reply-pairs, max-query-tasks, max-robots, "
            "max-robot-text-bytes, max-motion-states, max-query-work, max-ring-bytes, max-scene-triangles and "
            "max-robot-triangles are reported to clients in HelloReply.limits (libtandem's tdm_limits). "
            "Signals: SIGINT or SIGTERM shut down gracefully (stop accepting, answer what is in flight, close); "
            "a second one closes connections at once.", 0);
}

void tdm_config_log(const tdm_config *c)
{
    if (!tdm_log_enabled(TDM_LOG_DEBUG)) return;
    for (size_t i = 0; i < c->n_listen; i++) tdm_log_debug("config: listen=%s", c->listen[i]);
    const char *base = (const char *)c;
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt *o = &opts[i];
        switch (o->type) {
        case T_U32: tdm_log_debug("config: %s=%" PRIu32, o->name, *(const uint32_t *)(base + o->off)); break;
        case T_U64: tdm_log_debug("config: %s=%" PRIu64, o->name, *(const uint64_t *)(base + o->off)); break;
        case T_INT:
        case T_BOOL: tdm_log_debug("config: %s=%d", o->name, *(const int *)(base + o->off)); break;
        case T_LEVEL:
            tdm_log_debug("config: %s=%s", o->name, tdm_log_level_name(*(const int *)(base + o->off)));
            break;
        case T_STR: {
            const char *v = *(char *const *)(base + o->off);
            if (o->off == OFF(auth_token)) v = v && v[0] ? "(set)" : "(none)";
            if (v) tdm_log_debug("config: %s=%s", o->name, v);
            break;
        }
        case T_LIST: break;
        }
    }
}
