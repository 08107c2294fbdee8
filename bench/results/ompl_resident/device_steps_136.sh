set -uo pipefail
# Written in the twenty-seventh session. Run after the pack of the query pool's per-kind trace (ARCHIVE=1
# TESTS="" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_136.sh".
# Call 136: two reply threads (rt2: call 135 cut a reply's hand-over from ~0.05 to ~0.02 ms) alone and
# with async lanes (three lanes, or two of three slots), against the defaults; three alternated rounds.
source bench/device_unpack.sh /tmp/p136
for r in 1 2 3; do
  if (( r % 2 )); then vs="gpu gpu:rt2 gpu:async:rt2 gpu:async:lanes2:st3:rt2"; else vs="gpu:async:lanes2:st3:rt2 gpu:async:rt2 gpu:rt2 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call136.txt | grep -E '^==' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call136.txt | tee $OUT/table_call136.md
grep -E "^==|of them motion" $OUT/rrt_call136.txt | sed 's/problems=700.*problems_per_s=\([0-9.]*\).*/\1/' | paste - - - - | head -20
echo "done at ${SECONDS}s"
