set -uo pipefail
# Written in the thirty-fourth session. Run after a pack of f40601c's build (ARCHIVE=1 OMPL=1
# TESTS="ring daemon robotd ompl" bench/device_pack.sh build .packs/new; then rm -rf .packs/new),
# carrying [".packs", ".panda"], on a fresh machine:
# device run "CALL=201 bash bench/results/ompl_resident/device_steps_201.sh".
# Call 201: the session's two ring changes (--max-ring-memory, a budget of the rings' own; idle rings
# parked, --ring-park-us) through ring, daemon, robotd and ompl on the GPU build; then 64 planners at
# the defaults (rings parked after 10 ms idle) against park0 (never parked, as before), alternated.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc
for t in ring daemon robotd ompl; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
V1="gpu gpu:park0"
V2="gpu:park0 gpu"
for r in $(seq ${ROUNDS:-4}); do
  V=$([ $((r % 2)) = 1 ] && echo "$V1" || echo "$V2")
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $V >> $OUT/rrt_call$CALL.txt 2>&1
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt > $OUT/table_call$CALL.md; cat $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
