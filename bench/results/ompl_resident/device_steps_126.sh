set -uo pipefail
# Written in the twenty-sixth session. Run after call 125's pack (9885274), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_126.sh".
# Call 126: the goal's rounds with rrtconnect-fused on both rows (one request per goal-tree extension:
# examples/ompl/rrt_fused.h; not the goal's planner), three rounds: what the planner side could add.
source bench/device_unpack.sh /tmp/p126
PLANNER=rrtconnect-fused OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_fused_call126.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_fused_call126.md
echo "done at ${SECONDS}s"
