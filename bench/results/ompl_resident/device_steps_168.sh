set -uo pipefail
# Written in the thirty-first session; call 167's pack and machine (carrying [".packs", ".panda"]):
# device run "bash bench/results/ompl_resident/device_steps_168.sh".
# Call 168: call 167's comparison again (shares against share0 beside the 4M poses/s load, two more
# alternated rounds), and two alternated rounds without a load (do shares cost the planners alone?).
CALL=${CALL:-168}
source bench/device_unpack.sh /tmp/p$CALL
L1="--connections 16 --inflight 4 --duration 6 --batch 1024 --rate 4000"
for r in 1 2; do
  if (( r % 2 )); then vs="gpu:share0 gpu"; else vs="gpu gpu:share0"; fi
  LOAD="$L1" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|load:' | cut -c1-600
  echo "round $r (4M poses/s) done at ${SECONDS}s"
done
for r in 1 2; do
  if (( r % 2 )); then vs="gpu gpu:share0"; else vs="gpu:share0 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call${CALL}_none.txt | grep -E '^==' | cut -c1-240
  echo "round $r (no load) done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt | tee $OUT/table_call$CALL.md
python3 bench/variants_table.py $OUT/rrt_call${CALL}_none.txt | tee $OUT/table_call${CALL}_none.md
echo "done at ${SECONDS}s"
