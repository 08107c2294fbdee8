set -uo pipefail
# Written in the thirty-seventh session. Run after a pack of the session's last code (fixed frames, link
# padding and scale checked, pairs decided in O(1), max_objects checked before building): ARCHIVE=1 OMPL=1
# TESTS="attached robot_scene robotd" bench/device_pack.sh build .packs/new; then rm -rf .packs/new;
# carrying [".packs", ".panda"], on a fresh one-GPU machine:
# device run "CALL=215 bash bench/results/ompl_resident/device_steps_215.sh".
# Call 215: attached, robot_scene and robotd on the GPU; then the goal's eight rounds at the defaults. Call 216 ran it
# again (CALL=216) on dd58f0a (world planes; test_attached's GPU test with a plane).
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES:-attached robot_scene robotd}; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|SKIP" $OUT/tests.txt
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy" $OUT/goal_rounds_call$CALL.md
echo "done at ${SECONDS}s"
