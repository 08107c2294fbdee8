set -uo pipefail
# Written in the thirtieth session. Run with call 161's pack (89245a4; later commits change bench scripts
# and results only), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_162.sh".
# Call 162: another tenant's rigid queries beside the 64 planners (`run_rrt_variants.sh` LOAD, new:
# `tandem bench load` on the same host, 16 connections, every answer checked): none, batches of 1024
# poses at 4000 requests/s (4M poses/s), and batches of 16384 at 1000 requests/s (16M poses/s), once each.
source bench/device_unpack.sh /tmp/p162
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call162.txt | grep -E '^==' | cut -c1-240
for l in "--batch 1024 --rate 4000" "--batch 16384 --rate 1000"; do
  LOAD="--connections 16 --inflight 4 --duration 6 $l" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call162.txt | grep -E '^==|load:' | cut -c1-600
  echo "load $l done at ${SECONDS}s"
done
