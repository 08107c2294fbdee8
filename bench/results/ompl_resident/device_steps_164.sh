set -uo pipefail
# Written in the thirtieth session. Run after a pack of f7197ad (ARCHIVE=1 TESTS="limits daemon robotd"
# OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_164.sh".
# Call 164: the writer's changes with the GPU engine (large MeshPuts hashed on libuv's pool, queued for the
# builder, their device copy and file made there, deleted files unlinked there): limits, robotd;
# then call 160's churn of large meshes beside the 64 planners against none, once each.
source bench/device_unpack.sh /tmp/p164
for t in limits robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 120 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
python3 bench/sphere_obj.py 250000 0.5 /tmp/s250.obj; python3 bench/sphere_obj.py 320000 0.6 /tmp/s320.obj
CHURN="/tmp/s250.obj /tmp/s320.obj" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call164.txt | grep -E '^==|churn|writer' | cut -c1-240
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call164.txt | grep -E '^==' | cut -c1-240
echo "done at ${SECONDS}s"
