set -uo pipefail
# Written in the thirtieth session. Run after a pack of cbc32e5 (ARCHIVE=1 TESTS="robotd pooler" OMPL=1
# bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "CALL=157 bash bench/results/ompl_resident/device_steps_157.sh".
# Call 157: robotd and pooler with the tree arena's spare chunks (call 156b ran gpu, scheduler and
# robot_scene), then the goal's alternated rounds at the defaults, eight, on a fresh machine.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in robotd pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%|Host" $OUT/goal_rounds_call$CALL.md
echo "done at ${SECONDS}s"
