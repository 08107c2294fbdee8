set -uo pipefail
# Written in the twenty-seventh session. Run after call 136's pack, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_137.sh".
# Call 137: the goal in three rounds with two reply threads (rt2 beat the defaults in five paired runs
# of calls 135-136), then three at the defaults.
source bench/device_unpack.sh /tmp/p137
TANDEMD_ARGS="--reply-threads 2" OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_rt2_call137.md > $OUT/goal_rt2.log 2>&1; echo "goal rt2 exit $? at ${SECONDS}s"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_rt2_call137.md
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call137.md > $OUT/goal.log 2>&1; echo "goal exit $? at ${SECONDS}s"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_call137.md
echo "done at ${SECONDS}s"
