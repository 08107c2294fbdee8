set -uo pipefail
# Thirty-fifth session: dispatch under load at light concurrency, where a small request's run that
# went to the CPU engine's pool (~0.2 ms) may now go to the GPU (~1 ms): Apartment, 4 clients x 64 poses
# and 16 clients x 512 poses, one request in flight each, the defaults against TDM_DISPATCH_LOADED=0,
# alternated twice; queries/s and latency. Pack: MINIMAL=1 ARCHIVE=1 TESTS="" bench/device_pack.sh build
# .packs/new, carrying [".packs", ".scenes"], on a one-GPU machine:
# device run "bash bench/results/issue14_h200_light_steps.sh".
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for r in 1 2; do for v in loaded plain; do for row in "4 64" "16 512"; do
  set -- $row
  env $([[ $v == plain ]] && echo TDM_DISPATCH_LOADED=0) DEVICE_LISTS="0" SCENES="Apartment" OMPL=.scenes MODE=bool \
    N_POSES=20000 CLIENTS=$1 BATCH=$2 INFLIGHT=1 DURATION=3 PACK=/tmp/px/new REPORTS=/tmp/px/rep_${v}_${r}_$1 \
    bash bench/run_gpus.sh 2>&1 | grep -E '^\| Apart' | sed "s/^/$v $r c$1 b$2 /"
done; done; done | tee $OUT/light_h200.txt
echo "done at ${SECONDS}s"
