set -uo pipefail
# Written in the thirty-ninth session. Run after a pack of the session's code (ompl_plan --local-states):
# ARCHIVE=1 OMPL=1 TESTS="ompl_checker" bench/device_pack.sh build .packs/new; then rm -rf .packs/new;
# carrying [".packs", ".panda"], on a fresh one-GPU machine:
# device run "CALL=225 bash bench/results/ompl_resident/device_steps_225.sh".
# The suites in SUITES (default ompl_checker); then the goal's rounds (ROUNDS, default 8), each with a third
# row, the Tandem row with ALT_ARGS (default "--local-states 1": a planner's lone states answered in process
# by Tandem's CPU engine; several rows: flags separated by ";"), reported in goal_rounds_callN_alt*.md.
# Call 226: ALT_ARGS="--local-states 1;--local-states 1 --local-probes 4" (the pack at 983d457).
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES:-ompl_checker}; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|SKIP" $OUT/tests.txt
ALT_ARGS=${ALT_ARGS:---local-states 1} OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy" $OUT/goal_rounds_call$CALL.md $OUT/goal_rounds_call${CALL}_alt*.md
echo "done at ${SECONDS}s"
