set -uo pipefail
# Written in the twenty-seventh session. Run after call 138's pack (1b59c19), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_140.sh".
# Call 140: the goal in five rounds at the new defaults (two reply threads), on whatever host is lent.
source bench/device_unpack.sh /tmp/p140
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=5 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call140.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_call140.md
echo "done at ${SECONDS}s"
