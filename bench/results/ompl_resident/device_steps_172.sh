set -uo pipefail
# Written in the thirty-first session; call 171's pack and machine (carrying [".packs", ".panda"]):
# device run "bash bench/results/ompl_resident/device_steps_172.sh".
# Call 172: call 171's single pair beside 4M poses/s (the same row either way on this host, unlike
# calls 167-168's) in three more alternated rounds.
CALL=${CALL:-172}
source bench/device_unpack.sh /tmp/p$CALL
L1="--connections 16 --inflight 4 --duration 6 --batch 1024 --rate 4000"
for r in 1 2 3; do
  if (( r % 2 )); then vs="gpu gpu:share0"; else vs="gpu:share0 gpu"; fi
  LOAD="$L1" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|load:' | cut -c1-600
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt | tee $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
