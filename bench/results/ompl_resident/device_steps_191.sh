set -uo pipefail
# Written in the thirty-third session. Run after a pack of the session's last code (ompl_plan's rings
# by default on unix: addresses; ARCHIVE=1 OMPL=1 TESTS="ring ompl robotd" bench/device_pack.sh build
# .packs/new; then rm -rf .packs/new), carrying [".packs", ".panda"], on a fresh machine:
# device run "CALL=191 bash bench/results/ompl_resident/device_steps_191.sh".
# Call 191 on: ring, ompl (ompl_plan against tandemd over rings), robotd; then the goal's eight rounds at
# the defaults (the Tandem row's planners now through shared-memory rings).
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if [[ ${TESTS:-1} == 1 ]]; then
  for t in ring ompl robotd; do
    echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
  done
  grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
fi
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy" $OUT/goal_rounds_call$CALL.md
echo "done at ${SECONDS}s"
