set -uo pipefail
# Thirty-fifth session: alpha-1.5 on both GPUs runs the host at ~97 % of its 32 cores (the clients 22 %),
# with threads that poll: the lanes between batches, the reply threads, the pool's workers. Less
# polling, alternated twice: the defaults; --threads 8; --threads 8 with TDM_POOLER_SPIN_US=0 and
# --reply-threads 0. Same pack and carry as issue14_h200x2_trace_steps.sh:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_spin_steps.sh".
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
row() { # NAME THREADS SPIN TANDEMD_ARGS
  env ${3:+TDM_POOLER_SPIN_US=$3} THREADS=$2 DEVICE_LISTS="0 all" SCENES="alpha-1.5" OMPL=.scenes MODE=bool \
    N_POSES=100000 CLIENTS=64 BATCH=1024 INFLIGHT=4 DURATION=5 PACK=/tmp/px/new TANDEMD_ARGS="$4" \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_alpha_$1_$r.md 2>&1 | grep -E '^\| alpha' | sed "s/^/$1 $r /"
}
for r in 1 2; do
  row default 32 "" ""
  row th8 8 "" ""
  row th8spin0rt0 8 0 "--reply-threads 0"
done
echo "done at ${SECONDS}s"
