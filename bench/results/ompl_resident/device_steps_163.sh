set -uo pipefail
# Written in the thirtieth session. Call 162's steps with the large batches' pool sized to them
# (call 162's second load refused to start: --pool 4096 is smaller than --batch 16384), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_163.sh".
source bench/device_unpack.sh /tmp/p163
LOAD="--connections 16 --inflight 4 --duration 6 --batch 16384 --rate 1000 --pool 16384" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call163.txt | grep -E '^==|load:' | cut -c1-600
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call163.txt | grep -E '^==' | cut -c1-240
echo "done at ${SECONDS}s"
