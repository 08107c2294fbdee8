#!/usr/bin/env bash
# Runs every libFuzzer harness for SECONDS each, up to $FUZZ_JOBS (default: the
# number of cores) at once, and fails when any of them finds a crash, a leak, a
# timeout or runs out of memory.
#
#   fuzz/run.sh SECONDS [HARNESS...]
#
# Builds the fuzz tree first (build-fuzz/, clang, -DTDM_FUZZ=ON; $FUZZ_BUILD to
# put it elsewhere). Each harness starts from its committed seed corpus
# (fuzz/corpus/NAME/, read only) and a working corpus of its own
# ($FUZZ_BUILD/fuzz-runs/NAME/corpus/, kept between runs); logs and whatever
# input made it fail are in $FUZZ_BUILD/fuzz-runs/NAME/. One line per harness:
# name, seconds, executions, result.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: fuzz/run.sh SECONDS [HARNESS...]" >&2
  exit 2
fi
seconds=$1
shift
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
all=(daemon_requests client_replies datadir bvh_blob urdf planning_scene)
harnesses=("${@:-${all[@]}}")

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DTDM_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j"$(nproc)" >/dev/null

runs="$build/fuzz-runs"
mkdir -p "$runs"
# a crash report names the input; the process's own leaks at exit are not the harness's
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local h=$1 dir="$runs/$1"
  mkdir -p "$dir/corpus"
  local extra=()
  [ -f "fuzz/corpus/$h.dict" ] && extra+=(-dict="fuzz/corpus/$h.dict")
  local rc=0
  touch "$dir/.start"
  "$build/fuzz/fuzz_$h" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$dir/" "${extra[@]}" "$dir/corpus" "fuzz/corpus/$h" \
      >"$dir/log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1 || true)
  local result="clean"
  if [ $rc -ne 0 ]; then
    local found
    found=$(find "$dir" -maxdepth 1 -newer "$dir/.start" -regex '.*/\(crash\|leak\|timeout\|oom\|slow-unit\)-.*' \
            -printf '%f ' || true)
    result="FAILED (exit $rc): ${found:-no input saved}"
  fi
  printf '%-16s %6ss %12s execs  %s\n' "$h" "$seconds" "${execs:-?}" "$result" >"$dir/result"
  return $rc
}

failed=0
names=()
for h in "${harnesses[@]}"; do
  if [ ! -x "$build/fuzz/fuzz_$h" ]; then
    echo "no harness fuzz_$h (known: ${all[*]})" >&2
    exit 2
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  rm -f "$runs/$h/result"
  run_one "$h" &
  names+=("$h")
done
wait || true
for h in "${names[@]}"; do
  if [ -f "$runs/$h/result" ]; then cat "$runs/$h/result"; else echo "$h: no result" && failed=1; fi
  if grep -q FAILED "$runs/$h/result" 2>/dev/null; then
    failed=1
    echo "---- $runs/$h/log (end) ----"
    grep -v -E ' (error|warn) +(skipping|ignoring) ' "$runs/$h/log" | tail -n 60
  fi
done
if [ $failed -ne 0 ]; then
  echo "fuzz: a harness failed; see $runs/NAME/log and the input next to it" >&2
  exit 1
fi
