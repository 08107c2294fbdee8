set -uo pipefail
# Written in the thirty-first session; call 167's pack and machine (carrying [".packs", ".panda"]):
# device run "bash bench/results/ompl_resident/device_steps_169.sh".
# Call 169: shares against share0 without a load, four more alternated rounds (call 168's two gave
# share0 +3.0 %, call 167's one shares +5.9 %).
CALL=${CALL:-169}
source bench/device_unpack.sh /tmp/p$CALL
for r in 1 2 3 4; do
  if (( r % 2 )); then vs="gpu:share0 gpu"; else vs="gpu gpu:share0"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call${CALL}_none.txt | grep -E '^==' | cut -c1-240
  echo "round $r (no load) done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call${CALL}_none.txt | tee $OUT/table_call${CALL}_none.md
echo "done at ${SECONDS}s"
