set -uo pipefail
# Thirty-fifth session. Same pack and carry as issue14_h200x2_pool_steps.sh, on a two-GPU machine:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_engine_steps.sh".
# The pool steps found the two-GPU rows rise with fewer pool threads (--threads 8: alpha-1.5 1.23x,
# Apartment 1.77x, against 0.90x and 1.43x with 32), and the CPU engine traversing (traverse_lazy) on
# a third of the machine during alpha-1.5 on both GPUs. Is it the dispatch cost model sending runs to
# the CPU engine (--engine auto), and the CPU engine's runs taking the pool the GPU lanes' fills need?
# Rows: --engine gpu (no dispatch) with 32 and 8 pool threads, --engine auto with 8 and 4; each row's
# server stats (cpu_queries, gpu_queries, the cost model) kept in one file.
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib PROFILE_THREADS=1
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for row in "gpu 32" "gpu 8" "auto 8" "auto 4" "auto 32"; do
  set -- $row
  ENGINE=$1 THREADS=$2 DEVICE_LISTS="0 all" SCENES="alpha-1.5 Apartment" OMPL=.scenes MODE=bool N_POSES=100000 \
    CLIENTS=64 BATCH=1024 INFLIGHT=4 DURATION=5 PACK=/tmp/px/new REPORTS=/tmp/px/reports_$1_$2 \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_$1_t$2.md 2>&1 | grep -E '^\| (alpha|Apart)'
done
for d in /tmp/px/reports_*; do for f in $d/*.md; do
  echo "== ${d#/tmp/px/reports_} $(basename $f .md)"
  grep -E '^\| 64 \| 1024 \| tdm|^(cpu|gpu)_queries|^engine_detail|^batches|^requests' $f
done; done > $OUT/stats_h200x2_engine.txt
echo "done at ${SECONDS}s"
