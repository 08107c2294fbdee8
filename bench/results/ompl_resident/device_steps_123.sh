set -uo pipefail
# Written in the twenty-sixth session. Run after a pack of 2b1cf2a's build with the gpu and robot_scene
# suites (ARCHIVE=1 TESTS="gpu robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_123.sh".
# Call 123: a tree's free with cudaFree waits for the whole device, the express ring's resident
# launches (up to 2 ms) included, and meanwhile holds the lanes' CUDA calls: each free and upload timed
# (mtrace) with cudaFree and with the stream-ordered pool (mp1), two rounds; the gpu and robot_scene
# suites with the pool.
source bench/device_unpack.sh /tmp/p123
for t in gpu robot_scene; do
  echo "## test_$t pooled (exit code after)" >> $OUT/tests.txt; TDM_GPU_MESH_POOLED=1 timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:mtrace gpu:mp1:mtrace 2>&1 | tee -a $OUT/rrt_call123.txt | grep -E '^==|gpu mesh' | cut -c1-160
done
python3 bench/variants_table.py $OUT/rrt_call123.txt | tee $OUT/table_call123.md
echo "done at ${SECONDS}s"
