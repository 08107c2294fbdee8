set -uo pipefail
# Written in the fortieth session. Run after a pack of the session's code (libtandem's local engine;
# ompl_plan answers a planner's lone states with it by default):
# ARCHIVE=1 OMPL=1 TESTS="local ompl_checker ompl robot_scene robotd" bench/device_pack.sh build .packs/new;
# then rm -rf .packs/new; carrying [".packs", ".panda"], on a fresh one-GPU machine:
# device run "CALL=230 bash bench/results/ompl_resident/device_steps_230.sh".
# The suites in SUITES (default: local ompl_checker ompl robot_scene robotd); then the goal's rounds
# (ROUNDS, default 8): FCL 16 planners, Tandem 64 planners at the defaults (--local-states 1 since this
# session), and a third row with ALT_ARGS (default "--local-states 0": every state through tandemd, the
# goal's row until this session), reported in goal_rounds_callN_alt.md.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES-local ompl_checker ompl robot_scene robotd}; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
[ -f $OUT/tests.txt ] && grep -E "Synthesis|^## .*exit|FAIL|SKIP" $OUT/tests.txt
echo "suites done at ${SECONDS}s"
ALT_ARGS=${ALT_ARGS---local-states 0} OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy" $OUT/goal_rounds_call$CALL.md $OUT/goal_rounds_call${CALL}_alt*.md
echo "done at ${SECONDS}s"
