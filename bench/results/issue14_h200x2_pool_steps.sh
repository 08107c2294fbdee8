set -uo pipefail
# Written in the thirty-fourth session for the next one; run in the thirty-fifth (its call 1: issue14_h200x2/s35/call1/).
# Run after a minimal pack with symbols of a build with bench_pool_cost (STRIP=0 MINIMAL=1 ARCHIVE=1 TESTS="pool"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new) and .scenes as for
# issue14_h200x2_steps.sh, and Debian's perf in .perf/perf.tar.gz (as for ompl_resident's call 196),
# carrying [".packs", ".scenes", ".perf"], on a two-GPU machine:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_pool_steps.sh".
# Is the engines' one thread pool what keeps two GPUs from doubling one's row (bench/results/issue14.md,
# "The two-GPU figure": 31 pool workers at 14-17 cores with two engines, 3-4 with one)? (1) the pool
# alone on 32 cores: six posters of 8-share jobs, each policy (TDM_POOL_WAKE unset, need), twice;
# (2) run_gpus.sh's rows with each policy, tandemd's threads profiled; (2b) with a pool of 8 and of 16
# threads; (3) perf over every CPU during the
# alpha-1.5 row on both GPUs (the pack with symbols: STRIP=0), by thread and symbol.
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
/tmp/px/new/bin/test_pool 2>&1 | tail -1; TDM_POOL_WAKE=need /tmp/px/new/bin/test_pool 2>&1 | tail -1
for r in 1 2; do for w in "" need; do for p in 3 6; do
  TDM_POOL_WAKE=$w /tmp/px/new/bin/bench_pool_cost --threads 32 --posters $p --shares 8 --work-us 2 --seconds 2
done; done; done | tee $OUT/pool_cost_h200x2.txt
export PROFILE_THREADS=1
for w in "" need; do
  TDM_POOL_WAKE=$w DEVICE_LISTS="0 all" SCENES="alpha-1.5 Apartment" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 \
    BATCH=1024 INFLIGHT=4 DURATION=5 PACK=/tmp/px/new REPORTS=$OUT/reports_${w:-default} \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_wake_${w:-default}.md 2>&1 | grep -E '^\| (alpha|Apart)'
done
# (2b) fewer pool threads (tandemd --threads: 31 workers spinning beside six lanes' threads may take
# their cores)
for t in 8 16; do
  THREADS=$t DEVICE_LISTS="0 all" SCENES="alpha-1.5 Apartment" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 \
    BATCH=1024 INFLIGHT=4 DURATION=5 PACK=/tmp/px/new REPORTS=$OUT/reports_threads$t \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_threads$t.md 2>&1 | grep -E '^\| (alpha|Apart)'
done
mkdir -p /tmp/px/perf; tar xzf .perf/perf.tar.gz -C /tmp/px/perf
PERF="env LD_LIBRARY_PATH=/tmp/px/perf/lib /tmp/px/perf/perf"
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null; echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
unset PROFILE_THREADS
DEVICE_LISTS="all" SCENES="alpha-1.5" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 BATCH=1024 INFLIGHT=4 \
  DURATION=12 PACK=/tmp/px/new bash bench/run_gpus.sh > /dev/null 2>&1 & run=$!
sleep 8; $PERF record -e cpu-clock -F 2000 -a -o /tmp/px/perf.data -- sleep 2 2> /dev/null; wait $run
R="$PERF report -i /tmp/px/perf.data --stdio --no-children -g none"
{ $R --sort comm --percent-limit 0.3; $R --sort comm,dso,sym --percent-limit 0.2; } 2>/dev/null | grep -v "^$" | head -300 > $OUT/perf_h200x2_alpha_all.txt
echo "done at ${SECONDS}s"
