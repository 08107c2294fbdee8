#!/usr/bin/env bash
# Load and soak of one local tandemd with `tandem bench load` (issue 14, point 7).
#
#   bench/run_load.sh BUILD_DIR [OUT_DIR]
#
# BUILD_DIR: a build tree (daemon/tandemd, tools/tandem), or a bench/device_pack.sh folder
# (bin/tandemd, bin/tandem; set LD_LIBRARY_PATH=PACK/lib) for the GPU machine.
#
# Steps (each one's stdout/stderr kept in OUT_DIR, default ./load-results):
#   1. capacity: ACTIVE connections (default 1000) sending as fast as the server answers
#      (a rate far above it) for CAP_S seconds (default 20): its rps is the capacity.
#   2. idle: ACTIVE active + IDLE idle connections (default 10000), authenticated and silent,
#      at half the capacity for IDLE_S seconds (default 30); every idle one must stay open.
#   3. soak: ACTIVE connections at SOAK_PCT % (default 80) of the capacity for SOAK_S seconds
#      (default 600), tandemd's RSS (and, with nvidia-smi, its GPU memory) sampled every
#      SAMPLE_S seconds (default 5) into rss.tsv.
# Every answer is checked against the CPU engine inside `tandem bench load`, which exits 1
# unless every request was answered once and right.
#
# Environment: ACTIVE IDLE CAP_S IDLE_S SOAK_S SOAK_PCT SAMPLE_S BATCH (poses a request, 4) MODE
# (bool) INFLIGHT (requests in flight per connection, 4) LOAD_THREADS (the load generator's
# loops, nproc/4) PORT THREADS (tandemd's, 0: every core)
# ENGINE (tandemd --engine; default: tandemd's own choice).
set -euo pipefail

BUILD=${1:?usage: bench/run_load.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-load-results}
ACTIVE=${ACTIVE:-1000}
IDLE=${IDLE:-10000}
CAP_S=${CAP_S:-20}
IDLE_S=${IDLE_S:-30}
SOAK_S=${SOAK_S:-600}
SOAK_PCT=${SOAK_PCT:-80}
SAMPLE_S=${SAMPLE_S:-5}
BATCH=${BATCH:-4}
MODE=${MODE:-bool}
INFLIGHT=${INFLIGHT:-4}
# event loops of the load generator: a quarter of the cores (one loop tops out near one core)
LOAD_THREADS=${LOAD_THREADS:-$(( $(nproc) / 4 > 0 ? $(nproc) / 4 : 1 ))}
PORT=${PORT:-17490}
THREADS=${THREADS:-0}

# a build tree, or a bench/device_pack.sh folder (bin/; run with LD_LIBRARY_PATH=PACK/lib)
if [ -x "$BUILD/bin/tandemd" ]; then
    TANDEMD=$BUILD/bin/tandemd
    TANDEM=$BUILD/bin/tandem
else
    TANDEMD=$BUILD/daemon/tandemd
    TANDEM=$BUILD/tools/tandem
fi
mkdir -p "$OUT"
DATA=$(mktemp -d)
trap 'kill $DPID 2>/dev/null || true; wait $DPID 2>/dev/null || true; rm -rf "$DATA"' EXIT

# file descriptors: ACTIVE + IDLE sockets on each side
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NEED=$((ACTIVE + IDLE + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$NEED" ]; then
    echo "run_load.sh: $ACTIVE + $IDLE connections need $NEED file descriptors; ulimit -n is $(ulimit -n)" \
         "(hard $(ulimit -Hn)): raise the hard limit" >&2
    exit 1
fi
{ echo "ulimit -n: $(ulimit -n)"; echo "cores: $(nproc)"; uptime; } | tee "$OUT/limits.txt"

ENGINE_FLAGS=()
[ -n "${ENGINE:-}" ] && ENGINE_FLAGS=(--engine "$ENGINE")
"$TANDEMD" --data-dir "$DATA/data" --listen "127.0.0.1:$PORT" --threads "$THREADS" "${ENGINE_FLAGS[@]}" \
    --max-connections $((ACTIVE + IDLE + 100)) --max-connections-per-address 0 \
    --max-unauthenticated 1024 --idle-timeout 0 2>"$OUT/tandemd.log" &
DPID=$!
for _ in $(seq 600); do
    grep -q " ready" "$OUT/tandemd.log" 2>/dev/null && break
    sleep 0.1
done
grep -q " ready" "$OUT/tandemd.log" || { echo "tandemd did not start:"; cat "$OUT/tandemd.log"; exit 1; }
SERVER=127.0.0.1:$PORT

load() { # name, then bench load's options
    local name=$1
    shift
    echo "+ tandem bench load --server $SERVER --batch $BATCH --mode $MODE --inflight $INFLIGHT --threads $LOAD_THREADS $*" | tee "$OUT/$name.txt"
    "$TANDEM" bench load --server "$SERVER" --batch "$BATCH" --mode "$MODE" --inflight "$INFLIGHT" --threads "$LOAD_THREADS" "$@" >>"$OUT/$name.txt" 2>&1
    tail -1 "$OUT/$name.txt"
}
field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$OUT/$1.txt" | tail -1; }

# 1. capacity
load capacity --connections "$ACTIVE" --rate 10000000 --duration "$CAP_S"
CAP=$(field capacity rps)
CAP=${CAP%.*}
echo "capacity: $CAP requests/s of $BATCH poses" | tee -a "$OUT/limits.txt"

# 2. idle connections held during load
load idle --connections "$ACTIVE" --idle "$IDLE" --rate $((CAP / 2)) --duration "$IDLE_S" --progress 1

# 3. soak at SOAK_PCT % of capacity, RSS sampled
RATE=$((CAP * SOAK_PCT / 100))
printf 't_s\trss_kib\tgpu_proc_mib\tgpu_total_mib\n' >"$OUT/rss.tsv"
(
    t0=$(date +%s)
    while kill -0 $DPID 2>/dev/null; do
        rss=$(awk '/^VmRSS/ {print $2}' /proc/$DPID/status 2>/dev/null || echo "")
        gpu="" total=""
        if command -v nvidia-smi >/dev/null 2>&1; then
            # the process's own use (empty when the container's pids are not the driver's), and the device's
            gpu=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
                  awk -F', ' -v p=$DPID '$1 == p {print $2}')
            total=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
        fi
        printf '%s\t%s\t%s\t%s\n' $(($(date +%s) - t0)) "$rss" "$gpu" "$total" >>"$OUT/rss.tsv"
        sleep "$SAMPLE_S"
    done
) &
SAMPLER=$!
load soak --connections "$ACTIVE" --rate "$RATE" --duration "$SOAK_S" --progress 1 || true
kill $SAMPLER 2>/dev/null || true
uptime | tee -a "$OUT/limits.txt"
echo "soak: $RATE requests/s ($SOAK_PCT % of $CAP) for $SOAK_S s; RSS samples in $OUT/rss.tsv"
grep -E "^requests=" "$OUT/capacity.txt" "$OUT/idle.txt" "$OUT/soak.txt"
