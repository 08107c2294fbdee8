set -uo pipefail
# Written in the thirty-fourth session for the next one (prepared, not run: no device time was left).
# Run after a minimal pack of a build with bench_pool_cost (MINIMAL=1 ARCHIVE=1 TESTS="pool"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new) and .scenes as for
# issue14_h200x2_steps.sh, carrying [".packs", ".scenes"], on a two-GPU machine:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_pool_steps.sh".
# Is the engines' one thread pool what keeps two GPUs from doubling one's row (bench/results/issue14.md,
# "The two-GPU figure": 31 pool workers at 14-17 cores with two engines, 3-4 with one)? (1) the pool
# alone on 32 cores: six posters of 8-share jobs, each policy (TDM_POOL_WAKE unset, need), twice;
# (2) run_gpus.sh's rows with each policy, tandemd's threads profiled.
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
echo "done at ${SECONDS}s"
