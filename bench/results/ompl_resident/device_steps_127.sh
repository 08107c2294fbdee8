set -uo pipefail
# Written in the twenty-seventh session. Run after a pack of the async lanes' commit (ARCHIVE=1
# TESTS="robot_scene robotd pooler" OMPL=1 bench/device_pack.sh build .packs/new), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_127.sh".
# Call 127: async lanes (TDM_ASYNC_LANES=1, A/B): robot_scene (its three new async tests among them),
# the pooler and robotd suites with the switch on; then the defaults against async, and async with
# two lanes of three slots, two alternated rounds.
source bench/device_unpack.sh /tmp/p127
echo "## test_robot_scene (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_robot_scene >> $OUT/tests.txt 2>&1; echo "## test_robot_scene exit $?" >> $OUT/tests.txt
timeout 100 $P/new/bin/test_robot_scene --filter '*/pooled_*' --verbose 2>&1 | grep -E "async runs|PASS|FAIL|SKIP" >> $OUT/tests.txt
for t in pooler robotd; do
  echo "## TDM_ASYNC_LANES=1 test_$t (exit code after)" >> $OUT/tests.txt; TDM_ASYNC_LANES=1 timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|async runs" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
for r in 1 2; do
  if (( r % 2 )); then vs="gpu gpu:async gpu:async:lanes2:st3"; else vs="gpu:async:lanes2:st3 gpu:async gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call127.txt | grep -E '^==|async' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call127.txt | tee $OUT/table_call127.md
echo "done at ${SECONDS}s"
