#!/usr/bin/env bash
# tandemd over loopback: 1 / 8 / 64 clients x batches of 1 / 64 / 4096 poses, queries/s, p50 and p99
# request latency, and the ratio to the CPU engine alone on the same poses and thread count.
# Prints a Markdown report; with an argument, also writes it to that file.
#
#   bench/run_server.sh [REPORT.md]
#
# Knobs from the environment: BUILD_DIR (build), SCENE (demo: a generated scene; or an OMPL scene name
# read from $OMPL/canonical; OMPL: ../shared/scenes/ompl), N_POSES (20000), MODE (bool), DURATION (seconds per row, 3), THREADS
# ($(nproc)), SOCKET (tcp, unix, or tls: TCP with TLS, a self-signed certificate made with the openssl command), ENGINE (auto: tandemd's --engine, and the engine-alone figure's),
# BATCHES ("1 64 1024 4096"), CLIENTS ("1 8 64"), PROFILE_THREADS (1: also report the CPU use of each of
# tandemd's threads during each row, from bench/thread_cpu.sh), TANDEMD_ARGS (more tandemd flags, e.g.
# "--engine-lanes 1"), INFLIGHT (requests each client keeps in flight, 2; one client sending single
# poses always keeps 1), COMMIT (the commit named in the report; default: git's HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."
out_file=${1:-}
BUILD_DIR=${BUILD_DIR:-build}
SCENE=${SCENE:-demo}
N_POSES=${N_POSES:-20000}
MODE=${MODE:-bool}
SECONDS_PER=${DURATION:-3}
THREADS=${THREADS:-$(nproc)}
SOCKET=${SOCKET:-tcp}
ENGINE=${ENGINE:-auto}
BATCHES=${BATCHES:-1 64 1024 4096}
PROFILE_THREADS=${PROFILE_THREADS:-0}
CLIENTS=${CLIENTS:-1 8 64}
TANDEMD_ARGS=${TANDEMD_ARGS:-}
INFLIGHT=${INFLIGHT:-2}
tandem=$BUILD_DIR/tools/tandem
tandemd=$BUILD_DIR/daemon/tandemd
bench=$BUILD_DIR/bench/bench_server
work=$(mktemp -d)
pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

if [[ $SCENE == demo ]]; then
    "$tandem" demo --dir "$work/scene" --n "$N_POSES" --seed 1 > /dev/null
    env_mesh=$work/scene/env.obj robot_mesh=$work/scene/robot.obj poses=$work/scene/poses.txt
else
    ompl=${OMPL:-../shared/scenes/ompl}
    env_mesh=$ompl/canonical/$SCENE.env.obj robot_mesh=$ompl/canonical/$SCENE.robot.obj poses=$work/poses.txt
    "$tandem" poses random --cfg "$ompl/$SCENE.cfg" --n "$N_POSES" --seed 1 --out "$poses"
fi

port=$((7600 + RANDOM % 1000))
tls_args=()
if [[ $SOCKET == unix ]]; then addr=unix:$work/tandemd.sock; listen=$addr; else addr=127.0.0.1:$port; listen=$addr; fi
if [[ $SOCKET == tls ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" \
        -out "$work/cert.pem" -days 1 -subj /CN=bench -addext subjectAltName=IP:127.0.0.1 2> /dev/null
    tls_args=(--tls-cert "$work/cert.pem" --tls-key "$work/key.pem")
    addr=tls://$listen
    export TANDEM_TLS_CA=$work/cert.pem
fi
"$tandemd" --listen "$listen" "${tls_args[@]}" --data-dir "$work/data" --threads "$THREADS" --engine "$ENGINE" --log-level warn $TANDEMD_ARGS &
pid=$!
for _ in $(seq 100); do
    "$tandem" stats --server "$addr" > /dev/null 2>&1 && break
    sleep 0.1
done

rows=()
profiles=()
for clients in $CLIENTS; do
    for batch in $BATCHES; do
        inflight=$INFLIGHT
        [[ $batch == 1 && $clients == 1 ]] && inflight=1
        "$bench" --server "$addr" --env "$env_mesh" --robot "$robot_mesh" --poses "$poses" --mode "$MODE" \
            --clients "$clients" --batch "$batch" --inflight "$inflight" --seconds "$SECONDS_PER" \
            --threads "$THREADS" --engine "$ENGINE" > "$work/row" &
        bench_pid=$!
        if [[ $PROFILE_THREADS == 1 ]]; then
            # tandemd's threads while the clients send (the bench first loads its poses)
            sleep 1
            span=$(awk -v s="$SECONDS_PER" 'BEGIN { print (s > 2 ? s - 1.5 : 0.5) }')
            bench/thread_cpu.sh "$bench_pid" "$span" > "$work/client_prof" 2>/dev/null &
            prof=$(bench/thread_cpu.sh "$pid" "$span" || true)
            wait $! || true
            client=$(awk '{ s = 0; for (i = 2; i <= NF; i++) { split($i, a, "="); s += a[2] + 0 } printf "%.0f", s }' "$work/client_prof")
            profiles+=("| $clients | $batch | ${prof#THREADS } | $client |")
        fi
        wait "$bench_pid"
        line=$(grep '^RESULT' "$work/row")
        echo "$line" >&2
        rows+=("$line")
    done
done
stats=$("$tandem" stats --server "$addr")

prof_flag=""
[[ $PROFILE_THREADS == 1 ]] && prof_flag=" PROFILE_THREADS=1"
[[ -n $TANDEMD_ARGS ]] && prof_flag+=" TANDEMD_ARGS=\"$TANDEMD_ARGS\""
[[ $INFLIGHT != 2 ]] && prof_flag+=" INFLIGHT=$INFLIGHT"
[[ -n ${OMPL:-} ]] && prof_flag+=" OMPL=$OMPL"
report() {
    echo "# tandemd over loopback ($SOCKET socket)"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), nproc $(nproc)"
    echo "- Code: commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}, build directory $BUILD_DIR"
    echo "- Command: \`BUILD_DIR=$BUILD_DIR SCENE=$SCENE N_POSES=$N_POSES MODE=$MODE DURATION=$SECONDS_PER THREADS=$THREADS SOCKET=$SOCKET ENGINE=$ENGINE BATCHES=\"$BATCHES\" CLIENTS=\"$CLIENTS\"$prof_flag bench/run_server.sh${out_file:+ $out_file}\`"
    echo "- Scene: $SCENE ($N_POSES poses, seed 1), mode $MODE; tandemd --threads $THREADS --engine $ENGINE${TANDEMD_ARGS:+ $TANDEMD_ARGS} on the same host."
    echo "- Each client thread has its own connection and keeps K requests of B poses in flight (K = 1 for"
    echo "  one client sending single poses, $INFLIGHT otherwise) for $SECONDS_PER s. Latency: per request, send to reply."
    echo "  Engine alone: every pose through the same kind of engine (--engine $ENGINE, same threads) in this"
    echo "  process, in runs of up to 2^20 poses, best of two passes: the ceiling the daemon is measured against."
    echo
    echo "| clients | batch | in flight | queries/s | p50 latency (µs) | p99 latency (µs) | engine alone (q/s) | ratio |"
    echo "|--:|--:|--:|--:|--:|--:|--:|--:|"
    for r in "${rows[@]}"; do
        f() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$r"; }
        echo "| $(f clients) | $(f batch) | $(f inflight) | $(f qps) | $(f p50_us) | $(f p99_us) | $(f engine_qps) | $(f ratio) |"
    done
    if (( ${#profiles[@]} )); then
        echo
        echo "tandemd's threads during each row (bench/thread_cpu.sh: % of one core, xN = N threads of that name;"
        echo "tandemd is the event loop, tdm-pool libuv's pool (pose conversion of large requests), tdm-dispatch the dispatcher threads (one per engine lane; they also pack the replies), tdm-cpu the CPU engine, tdm-gpu-fill the GPU engine's host team; the clients share the host):"
        echo
        echo "| clients | batch | tandemd's threads | the clients' process (all threads) |"
        echo "|--:|--:|:--|--:|"
        printf '%s\n' "${profiles[@]}"
    fi
    echo
    echo "Server stats after the run:"
    echo
    echo '```'
    echo "$stats"
    echo '```'
}
if [[ -n $out_file ]]; then report | tee "$out_file"; else report; fi
