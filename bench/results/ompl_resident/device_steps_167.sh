set -uo pipefail
# Written in the thirty-first session. Run after a pack of 9db41fe (ARCHIVE=1 TESTS="pooler limits" OMPL=1
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_167.sh".
# Call 167: shares between owners in the pooler (9db41fe: the engine lanes' queue a queue per
# connection, start-time fair queueing by tasks) against `share0` (--share-by off: first come, first
# served, as in calls 162-163): pooler and limits with the GPU build; 64 planners beside another
# tenant's rigid queries (`tandem bench load`, 16 connections: calls 162-163's two loads), and
# without a load, alternated.
CALL=${CALL:-167}
source bench/device_unpack.sh /tmp/p$CALL
for t in pooler limits; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 250 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
$P/new/bin/test_limits --verbose --filter 'limits/a_flood*' 2>&1 | grep -E "share-by|Synthesis"
L1="--connections 16 --inflight 4 --duration 6 --batch 1024 --rate 4000"
L2="--connections 16 --inflight 4 --duration 6 --batch 16384 --rate 1000 --pool 16384"
for r in 1 2; do
  if (( r % 2 )); then vs="gpu gpu:share0"; else vs="gpu:share0 gpu"; fi
  LOAD="$L1" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|load:' | cut -c1-600
  echo "round $r (4M poses/s) done at ${SECONDS}s"
done
LOAD="$L2" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:share0 2>&1 | tee -a $OUT/rrt_call${CALL}_sat.txt | grep -E '^==|load:' | cut -c1-600
echo "saturating load done at ${SECONDS}s"
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:share0 gpu 2>&1 | tee -a $OUT/rrt_call${CALL}_none.txt | grep -E '^==' | cut -c1-240
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt | tee $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
