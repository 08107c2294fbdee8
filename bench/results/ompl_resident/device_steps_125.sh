set -uo pipefail
# Written in the twenty-sixth session. Run after a pack of the session's last build (ARCHIVE=1
# TESTS="robotd daemon pooler" OMPL=1 bench/device_pack.sh build .packs/new), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_125.sh".
# Call 125: robotd, daemon, pooler on the session's last build; the goal in three rounds at the
# defaults, with each row's planners' busy share (ompl_plan's busy_share, new).
source bench/device_unpack.sh /tmp/p125
for t in robotd daemon pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call125.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_call125.md
echo "done at ${SECONDS}s"
