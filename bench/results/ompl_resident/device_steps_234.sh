set -uo pipefail
# Written in the forty-first session. Run after a pack of the session's code:
# ARCHIVE=1 OMPL=1 TESTS="local ompl" bench/device_pack.sh build .packs/new; then rm -rf .packs/new;
# carrying [".packs", ".panda"], on a fresh one-GPU machine:
# device run "CALL=234 bash bench/results/ompl_resident/device_steps_234.sh".
# The suites local and ompl; then bench/run_ompl.sh twice (issue 13, 10 (c) and (d)) at 10 problems
# per scenario for the one-planner rows: at ompl_plan's defaults (a planner's lone states answered by
# libtandem's local engine) with the CPU and GPU engines, and with PLAN_ARGS="--local-states 0"
# (every state through tandemd, the (c) rows of earlier sessions) with the GPU engine.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES-local ompl}; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
[ -f $OUT/tests.txt ] && grep -E "Synthesis|^## .*exit|FAIL|SKIP" $OUT/tests.txt
echo "suites done at ${SECONDS}s"
common=(OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda THREADS=16 SINGLE_PER_SCENARIO=${SINGLE:-10})
env "${common[@]}" ENGINES="cpu gpu" bash bench/run_ompl.sh $OUT/ompl_call$CALL.md > $OUT/ompl_call$CALL.log 2>&1; echo "defaults exit $? at ${SECONDS}s"
env "${common[@]}" ENGINES=gpu PLAN_ARGS="--local-states 0" bash bench/run_ompl.sh $OUT/ompl_call${CALL}_alt.md > $OUT/ompl_call${CALL}_alt.log 2>&1; echo "alt exit $? at ${SECONDS}s"
grep -E "^\\| (FCL|Tandem)" $OUT/ompl_call$CALL.md $OUT/ompl_call${CALL}_alt.md
echo "done at ${SECONDS}s"
