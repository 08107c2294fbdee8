set -uo pipefail
# Written in the thirty-third session. Run after a pack of 672c75f and later (shared-memory rings;
# ARCHIVE=1 OMPL=1 TESTS="ring daemon robotd" bench/device_pack.sh build .packs/new; then
# rm -rf .packs/new), carrying [".packs", ".panda"]:
# device run "CALL=187 bash bench/results/ompl_resident/device_steps_187.sh".
# Call 187: the suites that a ring touches on the GPU build (ring, with the reply threads and loop
# polling a GPU engine has by default; daemon; robotd), then 64 RRTConnect planners at the defaults
# against the same with --ring on (each planner's frames through shared-memory rings), alternated.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc
for t in ring daemon robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
  echo "$t done at ${SECONDS}s"
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
PLANNERS=64 PER=${PER:-40} bash bench/run_rrt_variants.sh $P/new/bin .panda ${VARIANTS:-gpu gpu:ring gpu:ring gpu gpu gpu:ring} > $OUT/rrt_call$CALL.txt 2>&1
grep -E "^(==|  ompl_plan:|.*problems_per_s)" $OUT/rrt_call$CALL.txt | head -40
echo "done at ${SECONDS}s"
