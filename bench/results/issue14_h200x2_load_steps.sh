set -uo pipefail
# Thirty-fifth session, after issue14_h200x2_dispatch_steps.sh: the scheduler's and GPU tests on two
# GPUs (test_scheduler's two multi-GPU assumptions fixed), then alpha-1.5 and Apartment at the defaults
# (dispatch under load) with the load of the figure (64 clients x 4 x 1024 poses) and twice it (8 in
# flight; 128 clients x 4): does the two-GPU row scale when there is more work in flight than the
# lanes hold? Pack: MINIMAL=1 ARCHIVE=1 TESTS="scheduler cost_model gpu" bench/device_pack.sh build
# .packs/new, carrying [".packs", ".scenes"]:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_load_steps.sh".
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for t in cost_model scheduler gpu; do echo "== test_$t"; /tmp/px/new/bin/test_$t 2>&1 | grep -E "FAIL|Assert|expression|Synthesis"; done \
  | tee $OUT/tests_h200x2_load.txt
for row in "64 4" "64 8" "128 4"; do
  set -- $row
  DEVICE_LISTS="0 all" SCENES="alpha-1.5 Apartment" OMPL=.scenes MODE=bool N_POSES=100000 \
    CLIENTS=$1 BATCH=1024 INFLIGHT=$2 DURATION=5 PACK=/tmp/px/new \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_c$1_i$2.md 2>&1 | grep -E '^\| (alpha|Apart)' | sed "s/^/c$1 i$2 /"
done
echo "done at ${SECONDS}s"
