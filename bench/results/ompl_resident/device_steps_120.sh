set -uo pipefail
# Written in the twenty-sixth session. Run after call 119's pack (the build with TDM_POLL_YIELD),
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_120.sh".
# Call 120: the goal in three rounds with tandemd's polling threads yielding (TDM_POLL_YIELD=1), then
# in three rounds at the defaults, on one host; then defaults against yield, two rounds.
source bench/device_unpack.sh /tmp/p120
TDM_POLL_YIELD=1 OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_yield_call120.md > $OUT/goal_yield.log 2>&1; echo "goal exit $?"
grep -E "^\| [0-9]|median" $OUT/goal_rounds_yield_call120.md
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call120.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\| [0-9]|median" $OUT/goal_rounds_call120.md
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:yield gpu 2>&1 | tee -a $OUT/rrt_call120.txt | grep -E '^==' | cut -c1-160
done
python3 bench/variants_table.py $OUT/rrt_call120.txt | tee $OUT/table_call120.md
echo "done at ${SECONDS}s"
