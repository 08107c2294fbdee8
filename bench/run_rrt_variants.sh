#!/usr/bin/env bash
# RRTConnect planners through tandemd, one tandemd per variant, with where its time goes: the
# ompl_plan summary line, tandemd's CPU by thread (bench/thread_cpu.sh, 1.5 s in the middle of the
# run) and its pooler threads' batches (TDM_DISPATCH_TRACE). What bench/results/ompl_rrt_batches.md
# was measured with (in session scripts of the same steps).
#
#   bench/run_rrt_variants.sh BIN PANDA [VARIANT...]
#
# BIN: a folder with tandemd and ompl_plan (a bench/device_pack.sh pack's bin/, with LD_LIBRARY_PATH
# set to its lib/). PANDA: panda.urdf, panda.srdf, problems.tar.bz2 (../shared/robots/panda).
# ompl_plan's and tandemd's threads' time waiting for a core (bench/thread_wait.sh) over the same interval.
# VARIANT: ENGINE[:flag...] with ENGINE cpu|gpu|auto|hybrid and flags
#   levels    TDM_GPU_SMALL_TASKS=0 (no small run depth first)
#   inl64     TDM_MOTION_INLINE_STATES=64 (MotionCheck first batches up to 64 states on the loop)
#   wN        --motion-window N
#   lanesN    --engine-lanes N
#   dcmN      --device-configs-min N
#   dcs0      --device-configs-small 0 (planners' small requests get their poses made on the host)
#   block     TDM_GPU_BLOCKING_SYNC=1 (lanes sleep while they wait for the GPU)
#   bceN      TDM_GPU_BLOCK_CONFIG_ENTRIES=N (configs runs of at most N entries in block runs; 0: never)
#   shm       the data directory on /dev/shm
#   dup       --gpu-devices 0,0 (two GPU engines on device 0: twice the lanes, each with its own trees)
#   gpu1      --gpu-devices 0 (the first GPU alone, on a host with several: tandemd takes every one by default)
#   eph0      ompl_plan --ephemeral-scenes 0 (each problem's scene stored in tandemd's data directory, as before
#             2026-11-29's ephemeral scenes)
#   rc0       TDM_POOLER_RECLAIM=0 (removed trees' device copies freed by each engine's next run or upload only,
#             as before 2026-11-29's reclaim by idle pooler threads)
#   nodirect  TDM_DIRECT_REPLIES=0 (replies written by the loop, not by the pooler thread that packed them)
#   spinN     TDM_POOLER_SPIN_US=N (idle pooler threads poll N us for work before they sleep)
#   ioN       --io-threads N (N event loops on threads of their own take the connections)
#   lsN       --loop-spin-us N (a loop polls N us after a read before it sleeps in epoll)
#   parkN     --ring-park-us N (a ring connection idle N us is no longer polled; 0: never, as before 2026-11-29's parking)
#   connsN    CUDA_DEVICE_MAX_CONNECTIONS=N (the device's hardware queues the streams map onto; CUDA's default 8)
#   nograph   TDM_GPU_CONFIG_GRAPHS=0 (small configs runs launched kernel by kernel, not as the slot's graph)
#   mbtN      --max-batch-tasks N (a pooled batch's cap; a configuration weighs an eighth of its checks)
#   lltN      --latency-lane-tasks N (requests of at most N tasks are small and engine lane 0 runs only
#             those; 0: no latency lane, every lane takes any batch)
#   nopc      TDM_GPU_PROGRAM_CACHE_KB=0 (robot scene programs go with every run, none kept on the lanes)
#   hlN       --host-lanes N (threads answering small requests on the CPU engine; 0: none)
#   thN       --threads N (engine threads: the CPU pool that device engines' lanes share for big host-side steps)
#   hcN       --host-configs N (the largest request, in configurations, the host lanes take)
#   as0       TDM_MOTION_ANY_STOP=0 (the CPU engine runs every state of a one-motion any-state batch, as
#             before 2026-11-29: by default it stops at the first colliding one)
#   dl0       TDM_DISPATCH_LOADED=0 (--engine auto: the cost model alone, as before 2026-11-29's dispatch under load)
#   sp0       TDM_MOTION_SPREAD=0 (a motion's states after its probes first to last, as before 2026-11-29:
#             by default spread, every S-th state first)
#   fillloop  TDM_MOTION_FILL_ON_LOOP=1 (a motion's first states made on the loop, as before 2026-11-28)
#   skip0     TDM_ENGINE_SKIP_ANSWERED=0 (the CPU engine runs a bool query's checks after its first colliding one)
#   lean0     TDM_GPU_CONFIG_LEAN=0 (configs runs' kernels through global memory, as before 2026-11-28)
#   ring      ompl_plan --ring on (each planner's frames through shared-memory rings, not the socket)
#   rsuN      with ring: ompl_plan --ring-spin-us N (a planner polls its reply ring N us before it sleeps)
#   any0      ompl_plan --motion-any 0 (RRTConnect's motions ask for the first colliding state, as before 2026-11-28)
#   prN       --motion-probes N (a motion asked for any colliding state first checks N states coarse to fine)
#   prebuild0 TDM_SCENE_PREBUILD=0 (a robot scene built on the writer thread, not on libuv's pool before it, as before 2026-11-28)
#   rtN       --reply-threads N (threads writing the replies; 0: the pooler thread that ran the batch)
#   hmN       TDM_HOST_MIN_CONFIGS=N (requests of fewer configurations do not go to the host lanes: hm2 sends
#             a planner's single states to the express ring, leaving the host lanes to motions' probes)
#   hqN       TDM_HOST_QUEUE=N (N more small jobs may wait for a host thread before they go to the lanes)
#   rsN       TDM_REPLY_SPIN_US=N (the reply threads poll N us before they sleep)
#   solo0     TDM_CPU_SOLO_US=0 (the CPU engine wakes its pool for every list at once, as before 2026-11-28)
#   fused0    TDM_GPU_CONFIG_FUSED=0 (a planner's few configurations in a graph of six launches, not in one
#             kernel, as before 2026-11-28)
#   latN      --cpu-latency-us N (tandemd holds the host's CPU wake-up latency limit at N us while it runs)
#   cpu0-N    tandemd pinned to cores 0-N (taskset), the planners to the others (a service on cores of its own)
#   niceN     tandemd runs under `nice -n N` (its threads, polling ones too, yield to the planners' on a busy core)
#   fcN       TDM_GPU_FUSED_CONFIGS=N (graph runs of at most N configurations in one kernel; 64 by default)
#   xN        --express-configs N (requests of at most N configurations to the GPU's express ring)
#   xbN       --express-blocks N (its resident blocks)
#   xany      TDM_EXPRESS_ANY_COST=1 (the ring takes requests whatever their scene's learned cost)
#   xtN       TDM_EXPRESS_THREADS=N (threads polling the ring and finishing its requests, jobs to each in turn)
#   xloop     TDM_EXPRESS_ON_LOOP=1 (the loops poll the ring for their own requests and write those replies;
#             no express thread: the default since 2026-11-29, so the same as the defaults now)
#   xthread   TDM_EXPRESS_ON_LOOP=0 (the ring polled by its own thread, the reply threads writing its replies,
#             as before 2026-11-29)
#   yield     TDM_POLL_YIELD=1 (tandemd's polling threads yield their cores to the host's runnable threads:
#             the pooler's and reply threads' polls, a loop's idle turns, the driver's waits)
#   async     TDM_ASYNC_LANES=1 (each lane's thread keeps several device runs of configurations in flight,
#             one a slot, and polls them, instead of waiting for each; A/B, 2026-11-29)
#   stN       --gpu-streams N (each engine lane's slots: CUDA streams with their buffers)
#   mpN       TDM_GPU_MESH_POOLED=N (trees' device arrays from the stream-ordered pool: 1, or cudaMalloc and
#             cudaFree, which synchronise the device: 0)
#   arenaN    TDM_GPU_MESH_ARENA=N (0: each tree's arrays allocated with cudaMalloc and freed with cudaFree,
#             which waits for the device, as before 2026-11-29's tree arena; 1, the default: extents of chunks)
#   stage0    TDM_WRITER_STAGE=0 (the writer as before 2026-11-29: large meshes' files written, deleted meshes'
#             files unlinked, and a large mesh that finds the builder busy built, on the writer thread)
#   sparesN   TDM_GPU_MESH_SPARES=N (empty chunks of large trees kept as spares; 0: each given back with
#             cudaFree when its tree leaves, as before 2026-11-29's spares; 2 by default)
#   share0    --share-by off (the engine lanes' queue first come, first served, as before 2026-11-29's shares;
#             by default each connection takes its turn)
#   mtrace    TDM_GPU_MESH_TRACE=1 (each tree's upload and free timed, summarised after the run, trees of
#             100 000 triangles or more apart)
#   gtrace    TDM_GPU_TRACE=1 (each device run of configurations: its time in the GPU engine and its wait for
#             the device, summarised by size)
#   prof      TDM_GPU_PROFILE (a line per device run, summarised by size after the run; no CUDA graphs)
# (default: gpu). Knobs: PLANNERS="1 64" (runs per variant), PER=40 (problems per scenario with
# more than one planner; 2 with one, or PER1), TIME_LIMIT=2, RESOLUTION=0.02, SEED=1, PLANNER=rrtconnect (or rrtconnect-fused), SAVE_DIR (each run's
# ompl_plan output kept there as plan_VARIANT_PLANNERS.txt, ':' as '_'), CHURN="FILE..." (while the
# planners run, a loop per mesh file puts it into tandemd and deletes it again with `tandem mesh`, as a
# tenant that churns meshes would: bench/sphere_obj.py writes large ones; its cycles are counted), LOAD="ARGS"
# (while the planners run, `tandem bench load --server unix:SOCK ARGS` as another tenant's rigid queries,
# e.g. LOAD="--connections 16 --batch 1024 --rate 2000 --duration 60"; its summary line is printed).
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
bin=$(cd "${1:?BIN}" && pwd) panda=$(cd "${2:?PANDA}" && pwd)
shift 2
variants=("$@")
(( ${#variants[@]} )) || variants=(gpu)
work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work" /dev/shm/tandem-rrt-variants; }
trap cleanup EXIT
tar xjf "$panda/problems.tar.bz2" -C "$work"
base=(--urdf "$panda/panda.urdf" --srdf "$panda/panda.srdf" --resolution "${RESOLUTION:-0.02}" --seed "${SEED:-1}"
      --planner "${PLANNER:-rrtconnect}" --time-limit "${TIME_LIMIT:-2}")
for v in "${variants[@]}"; do
    eng=${v%%:*} extra=() envs=() plan_extra=()
    [[ $v == *:any0* ]] && plan_extra+=(--motion-any 0)
    [[ $v =~ :ring(:|$) ]] && plan_extra+=(--ring on)
    [[ $v =~ :eph0(:|$) ]] && plan_extra+=(--ephemeral-scenes 0)
    [[ $v =~ :rsu([0-9]+) ]] && plan_extra+=(--ring-spin-us "${BASH_REMATCH[1]}")
    [[ $v =~ :pr([0-9]+) ]] && extra+=(--motion-probes "${BASH_REMATCH[1]}")
    [[ $v == *:levels* ]] && envs+=(TDM_GPU_SMALL_TASKS=0)
    [[ $v == *:inl64* ]] && envs+=(TDM_MOTION_INLINE_STATES=64)
    [[ $v =~ :w([0-9]+) ]] && extra+=(--motion-window "${BASH_REMATCH[1]}")
    [[ $v =~ :lanes([0-9]+) ]] && extra+=(--engine-lanes "${BASH_REMATCH[1]}")
    [[ $v =~ :dcm([0-9]+) ]] && extra+=(--device-configs-min "${BASH_REMATCH[1]}")
    [[ $v == *:dcs0* ]] && extra+=(--device-configs-small 0)
    [[ $v == *:block* ]] && envs+=(TDM_GPU_BLOCKING_SYNC=1)
    [[ $v =~ :bce([0-9]+) ]] && envs+=(TDM_GPU_BLOCK_CONFIG_ENTRIES="${BASH_REMATCH[1]}")
    [[ $v == *:dup* ]] && extra+=(--gpu-devices 0,0)
    [[ $v =~ :gpu1(:|$) ]] && extra+=(--gpu-devices 0)
    [[ $v =~ :rc0(:|$) ]] && envs+=(TDM_POOLER_RECLAIM=0)
    [[ $v == *:nodirect* ]] && envs+=(TDM_DIRECT_REPLIES=0)
    [[ $v == *:prebuild0* ]] && envs+=(TDM_SCENE_PREBUILD=0)
    [[ $v == *:fused0* ]] && envs+=(TDM_GPU_CONFIG_FUSED=0)
    [[ $v =~ :fc([0-9]+) ]] && envs+=(TDM_GPU_FUSED_CONFIGS="${BASH_REMATCH[1]}")
    [[ $v =~ :rt([0-9]+) ]] && extra+=(--reply-threads "${BASH_REMATCH[1]}")
    [[ $v =~ :lat([0-9]+) ]] && extra+=(--cpu-latency-us "${BASH_REMATCH[1]}")
    [[ $v =~ :spin([0-9]+) ]] && envs+=(TDM_POOLER_SPIN_US="${BASH_REMATCH[1]}")
    [[ $v =~ :io([0-9]+) ]] && extra+=(--io-threads "${BASH_REMATCH[1]}")
    [[ $v =~ :ls([0-9]+) ]] && extra+=(--loop-spin-us "${BASH_REMATCH[1]}")
    [[ $v =~ :park([0-9]+) ]] && extra+=(--ring-park-us "${BASH_REMATCH[1]}")
    [[ $v == *:prof* ]] && envs+=(TDM_GPU_PROFILE="$work/gpu_prof.txt")
    [[ $v == *:gtrace* ]] && envs+=(TDM_GPU_TRACE=1)
    [[ $v == *:solo0* ]] && envs+=(TDM_CPU_SOLO_US=0)
    [[ $v =~ :hq([0-9]+) ]] && envs+=(TDM_HOST_QUEUE="${BASH_REMATCH[1]}")
    [[ $v =~ :hm([0-9]+) ]] && envs+=(TDM_HOST_MIN_CONFIGS="${BASH_REMATCH[1]}")
    [[ $v =~ :rs([0-9]+) ]] && envs+=(TDM_REPLY_SPIN_US="${BASH_REMATCH[1]}")
    [[ $v == *:nograph* ]] && envs+=(TDM_GPU_CONFIG_GRAPHS=0)
    [[ $v == *:nopc* ]] && envs+=(TDM_GPU_PROGRAM_CACHE_KB=0)
    [[ $v == *:lean0* ]] && envs+=(TDM_GPU_CONFIG_LEAN=0)
    [[ $v == *:skip0* ]] && envs+=(TDM_ENGINE_SKIP_ANSWERED=0)
    [[ $v =~ :x([0-9]+) ]] && extra+=(--express-configs "${BASH_REMATCH[1]}")
    [[ $v =~ :xb([0-9]+) ]] && extra+=(--express-blocks "${BASH_REMATCH[1]}")
    [[ $v == *:xany* ]] && envs+=(TDM_EXPRESS_ANY_COST=1)
    [[ $v =~ :xt([0-9]+) ]] && envs+=(TDM_EXPRESS_THREADS="${BASH_REMATCH[1]}")
    [[ $v == *:xloop* ]] && envs+=(TDM_EXPRESS_ON_LOOP=1)
    [[ $v == *:xthread* ]] && envs+=(TDM_EXPRESS_ON_LOOP=0)
    [[ $v == *:yield* ]] && envs+=(TDM_POLL_YIELD=1)
    [[ $v == *:async* ]] && envs+=(TDM_ASYNC_LANES=1)
    [[ $v =~ :st([0-9]+) ]] && extra+=(--gpu-streams "${BASH_REMATCH[1]}")
    level=warn; [[ $v =~ :x([0-9]+) ]] && level=info # the stop's stats lines: what the ring answered
    [[ $v == *:async* ]] && level=info # ... and what the async lanes started
    [[ $v =~ :mp([0-9]+) ]] && envs+=(TDM_GPU_MESH_POOLED="${BASH_REMATCH[1]}")
    [[ $v =~ :arena([0-9]+) ]] && envs+=(TDM_GPU_MESH_ARENA="${BASH_REMATCH[1]}")
    [[ $v == *:mtrace* ]] && envs+=(TDM_GPU_MESH_TRACE=1)
    [[ $v =~ :spares([0-9]+) ]] && envs+=(TDM_GPU_MESH_SPARES="${BASH_REMATCH[1]}")
    [[ $v == *:stage0* ]] && envs+=(TDM_WRITER_STAGE=0)
    [[ $v == *:share0* ]] && extra+=(--share-by off)
    [[ $v == *:fillloop* ]] && envs+=(TDM_MOTION_FILL_ON_LOOP=1)
    [[ $v == *:as0* ]] && envs+=(TDM_MOTION_ANY_STOP=0)
    [[ $v == *:sp0* ]] && envs+=(TDM_MOTION_SPREAD=0)
    [[ $v == *:dl0* ]] && envs+=(TDM_DISPATCH_LOADED=0)
    [[ $v =~ :mbt([0-9]+) ]] && extra+=(--max-batch-tasks "${BASH_REMATCH[1]}")
    [[ $v =~ :llt([0-9]+) ]] && extra+=(--latency-lane-tasks "${BASH_REMATCH[1]}")
    [[ $v =~ :hl([0-9]+) ]] && extra+=(--host-lanes "${BASH_REMATCH[1]}")
    [[ $v =~ :hc([0-9]+) ]] && extra+=(--host-configs "${BASH_REMATCH[1]}")
    [[ $v =~ :th([0-9]+) ]] && extra+=(--threads "${BASH_REMATCH[1]}")
    [[ $v =~ :conns([0-9]+) ]] && envs+=(CUDA_DEVICE_MAX_CONNECTIONS="${BASH_REMATCH[1]}")
    dd=$work/data; [[ $v == *:shm* ]] && dd=/dev/shm/tandem-rrt-variants
    rm -rf "$dd"
    sock=$work/tandemd.sock
    rm -f "$sock"
    nice_n=0; [[ $v =~ :nice([0-9]+) ]] && nice_n=${BASH_REMATCH[1]}
    pin=() plan_pin=()
    if [[ $v =~ :cpu0-([0-9]+) ]]; then
        pin=(taskset -c "0-${BASH_REMATCH[1]}") plan_pin=(taskset -c "$((BASH_REMATCH[1] + 1))-$(($(nproc) - 1))")
    fi
    env "${envs[@]}" TDM_DISPATCH_TRACE=1 TDM_WRITER_TRACE=1 "${pin[@]}" nice -n "$nice_n" "$bin/tandemd" --listen "unix:$sock" --data-dir "$dd" --engine "$eng" \
        "${extra[@]}" --log-level "$level" 2> "$work/trace.txt" &
    pid=$!
    wait_listening "run_rrt_variants.sh ($v)" "$sock" "$pid" "$work/trace.txt"
    for pl in ${PLANNERS:-1 64}; do
        per=${PER:-40}
        [[ $pl == 1 && -z ${PER1:-} ]] && per=2; [[ $pl == 1 && -n ${PER1:-} ]] && per=$PER1
        : > "$work/trace.txt"
        "${plan_pin[@]}" "$bin/ompl_plan" "${base[@]}" "${plan_extra[@]}" --planners "$pl" --checker tandem --server "unix:$sock" --per-scenario "$per" \
            "$work/problems" > "$work/plan.txt" 2> "$work/plan.err" &
        plan=$!
        ( sleep 2; bash bench/thread_cpu.sh "$pid" 1.5 > "$work/threads.txt" ) &
        sampler=$!
        ( sleep 2; bash bench/thread_cpu.sh "$plan" 1.5 > "$work/plan_threads.txt" ) &
        sampler2=$!
        ( sleep 2; bash bench/thread_wait.sh "$plan" 1.5 > "$work/plan_waits.txt" ) &
        sampler3=$!
        ( sleep 2; bash bench/thread_wait.sh "$pid" 1.5 > "$work/waits.txt" ) &
        sampler4=$!
        churn=()
        for f in ${CHURN:-}; do # a tenant's mesh put and deleted again, over and over
            c=$work/churn_${#churn[@]}
            ( n=0; while id=$("$bin/tandem" mesh put "$f" --server "unix:$sock" 2>> "$c.err") &&
                         "$bin/tandem" mesh rm "$id" --server "unix:$sock" 2>> "$c.err"; do n=$((n + 1)); echo "$n" > "$c.n"; done ) &
            churn+=($!)
        done
        load=""
        if [[ -n ${LOAD:-} ]]; then # another tenant's rigid queries
            # shellcheck disable=SC2086
            "$bin/tandem" bench load --server "unix:$sock" $LOAD --drain 2 --progress 0 > "$work/load.txt" 2>&1 &
            load=$!
        fi
        wait "$plan"
        [[ -n $load ]] && wait "$load" # its --duration (and --drain 2) after it started
        for c in "${churn[@]}"; do pkill -P "$c" 2>/dev/null; kill "$c" 2>/dev/null; done
        wait "$sampler" "$sampler2" "$sampler3" "$sampler4" "${churn[@]}" 2>/dev/null
        echo "== $v planners=$pl: $(tail -1 "$work/plan.txt")"
        [[ -n $load ]] && echo "  load: $(tail -3 "$work/load.txt" | tr '\n' ' ' | cut -c1-400)"
        for ((k = 0; k < ${#churn[@]}; k++)); do
            echo "  churn $k: $(cat "$work/churn_$k.n" 2>/dev/null || echo 0) meshes put and deleted; $(sort -u "$work/churn_$k.err" 2>/dev/null | head -2 | tr '\n' ' ')"
            rm -f "$work/churn_$k.n" "$work/churn_$k.err"
        done
        [[ -n ${SAVE_DIR:-} ]] && cp "$work/plan.txt" "$SAVE_DIR/plan_${v//:/_}_$pl.txt"
        echo "  tandemd $(cat "$work/threads.txt")"
        echo "  ompl_plan $(cut -c1-200 "$work/plan_threads.txt")"
        echo "  tandemd $(cut -c1-300 "$work/waits.txt") (ms waiting for a core/on one, 1.5 s)"
        echo "  ompl_plan $(cut -c1-200 "$work/plan_waits.txt")"
        # whole trace lines only: with --log-level info the log's lines share stderr with them
        awk '/^dispatch [0-9]+: waited [0-9.]+ ms, [0-9]+ jobs, [0-9]+ queries, ran .*, queued [0-9.]+\)$/ { t = $2; n[t]++; jobs[t] += $6; q[t] += $8; ran[t] += $11; eng[t] += $18; rep[t] += $22; w[t] += $4
                           if ($(NF - 1) == "queued") { qd[t] += $NF * $6; nj[t] += $6 } }
             # batches of async lanes (TDM_ASYNC_LANES=1): "dispatch N: async, J jobs, Q queries, ran T ms, at A (replies R)"
             /^dispatch [0-9]+: async, [0-9]+ jobs, [0-9]+ queries, ran [0-9.]+ ms, at [0-9.]+ \(replies [0-9.]+\)$/ {
                 t = $2; an[t]++; aj[t] += $4; aq[t] += $6; ar[t] += $9; r = $14; sub(/\)$/, "", r); ap[t] += r }
             END { for (t in n) printf "  thread %s batches=%d jobs/b=%.1f queries/b=%.1f ran=%.3fms engine=%.3f replies=%.3f waited=%.3f queued=%.3f\n",
                   t, n[t], jobs[t] / n[t], q[t] / n[t], ran[t] / n[t], eng[t] / n[t], rep[t] / n[t], w[t] / n[t], nj[t] ? qd[t] / nj[t] : 0
                   for (t in an) printf "  thread %s async batches=%d jobs/b=%.1f queries/b=%.1f ran=%.3fms (start to end) replies=%.3f\n",
                   t, an[t], aj[t] / an[t], aq[t] / an[t], ar[t] / an[t], ap[t] / an[t] }' "$work/trace.txt"
        # gtrace: "gpu configs: N configurations of R robot scenes, K checks at most: T ms, waiting W ms, ..."
        awk '/^gpu configs:/ { n = $3; b = n <= 8 ? "1-8" : n <= 64 ? "9-64" : n <= 256 ? "65-256" : n <= 1024 ? "257-1024" : ">1024"
                               c[b]++; q[b] += n; t[b] += $(NF - 9); w[b] += $(NF - 6) }
             END { for (b in c) printf "  gpu engine runs of %s configurations: %d, mean %.0f configurations, %.3f ms in the engine, %.3f waiting for the device\n",
                   b, c[b], q[b] / c[b], t[b] / c[b], w[b] / c[b] }' "$work/trace.txt"
        # mtrace (or gtrace): "gpu mesh upload: N triangles: T ms", "gpu mesh free: N triangles: T ms"
        awk '/^gpu mesh (upload|free):/ { k = $3; if ($4 + 0 >= 100000) k = k " (100 000 triangles or more)"
                                          c[k]++; t[k] += $(NF - 1); if ($(NF - 1) > m[k]) m[k] = $(NF - 1) }
             END { for (k in c) printf "  gpu mesh %s %d, mean %.3f ms, max %.3f, total %.3f s\n", k, c[k], t[k] / c[k], m[k], t[k] / 1e3 }' "$work/trace.txt"
    done
    kill "$pid"
    wait "$pid" 2>/dev/null
    pid=""
    # what tandemd's trace says at its stop (the replies' time in tandemd, over the last run)
    grep -av '^dispatch\|^gpu configs\|^gpu mesh\|Z info ' "$work/trace.txt" | sed 's/^/  /' | tail -14
    grep -a 'Z info  stats: \(express\|async\|queries cpu\)' "$work/trace.txt" | sed 's/^[^ ]* info  /  /'
    if [[ -s $work/gpu_prof.txt ]]; then # per size of run: runs and mean device us of its stages, host us
        awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
               n = f["n"]; b = n <= 8 ? "1-8" : n <= 64 ? "9-64" : n <= 256 ? "65-256" : n <= 1024 ? "257-1024" : ">1024"
               c[b]++; su[b] += f["setup_us"]; bl[b] += f["block_us"]; fo[b] += f["fold_us"]; ho[b] += f["host_us"]; q[b] += n }
             END { for (b in c) printf "  gpu runs of %s configurations: %d, mean %.0f configs, device us: set-up %.1f block %.1f fold %.1f; host us %.1f\n",
                   b, c[b], q[b] / c[b], su[b] / c[b], bl[b] / c[b], fo[b] / c[b], ho[b] / c[b] }' "$work/gpu_prof.txt"
        rm -f "$work/gpu_prof.txt"
    fi
done
