set -uo pipefail
# Written in the twenty-seventh session. Run after a pack of 1b59c19 (ARCHIVE=1 TESTS="robotd daemon pooler
# robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_138.sh".
# Call 138: the session's last build (two reply threads by default, async lanes as an A/B switch):
# robotd, daemon, pooler, robot_scene; the goal in three rounds at the new defaults.
source bench/device_unpack.sh /tmp/p138
for t in robotd daemon pooler robot_scene; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call138.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_call138.md
echo "done at ${SECONDS}s"
