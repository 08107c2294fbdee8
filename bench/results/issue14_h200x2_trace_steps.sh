set -uo pipefail
# Thirty-fifth session: where a batch's time goes for alpha-1.5 on one GPU and on both, at three engine
# lanes a GPU and at one (TDM_DISPATCH_TRACE, summarised by bench/dispatch_trace_summary.awk). Same
# pack and carry as issue14_h200x2_lanes_steps.sh (without .perf):
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_trace_steps.sh".
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib TDM_DISPATCH_TRACE=1
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for lanes in 3 1; do
  DEVICE_LISTS="0 all" SCENES="alpha-1.5" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 BATCH=1024 INFLIGHT=4 \
    DURATION=5 PACK=/tmp/px/new TANDEMD_ARGS="--engine-lanes $lanes" REPORTS=/tmp/px/tr_l$lanes \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_alpha_trace_lanes$lanes.md 2>&1 | grep -E '^\| alpha' | sed "s/^/lanes $lanes /"
done
for f in /tmp/px/tr_l*/*.err; do
  echo "== $f"; awk -f bench/dispatch_trace_summary.awk $f
  grep -E '^\| 64 \| 1024 \|' ${f%.err}.md | head -2
done | tee $OUT/trace_h200x2_alpha.txt
echo "done at ${SECONDS}s"
