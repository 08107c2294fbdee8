set -uo pipefail
# Written in the twenty-seventh session. Run after call 138's pack (1b59c19), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_139.sh".
# Call 139: at the new defaults (two reply threads), a third reply thread, a third host lane, and both;
# three alternated rounds.
source bench/device_unpack.sh /tmp/p139
for r in 1 2 3; do
  if (( r % 2 )); then vs="gpu gpu:rt3 gpu:hl3 gpu:rt3:hl3"; else vs="gpu:rt3:hl3 gpu:hl3 gpu:rt3 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call139.txt | grep -E '^==' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call139.txt | tee $OUT/table_call139.md
echo "done at ${SECONDS}s"
