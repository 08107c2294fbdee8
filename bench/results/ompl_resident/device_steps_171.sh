set -uo pipefail
# Written in the thirty-first session. Run after a pack of the session's last code (ARCHIVE=1
# TESTS="pooler limits robotd" OMPL=1 bench/device_pack.sh build .packs/new; then rm -rf .packs/new),
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_171.sh".
# Call 171: the session's last code (shares taken with O(log owners) heap moves, the builder's
# turns, a large world's content on libuv's pool, tandem_pooler_owners) with the GPU build: pooler,
# limits, robotd; one more alternated pair of calls 167-168's comparison beside 4M poses/s.
# Call 172 then runs the goal's rounds on the same machine (device_steps_148.sh, CALL=172).
CALL=${CALL:-171}
source bench/device_unpack.sh /tmp/p$CALL
for t in pooler limits robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 280 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
$P/new/bin/test_limits --verbose --filter 'limits/the_builder*' 2>&1 | grep -E "share-by|Synthesis"
echo "tests done at ${SECONDS}s"
L1="--connections 16 --inflight 4 --duration 6 --batch 1024 --rate 4000"
LOAD="$L1" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:share0 gpu 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|load:' | cut -c1-600
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt | tee $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
