set -uo pipefail
# Written in the twenty-sixth session. Run after call 123's pack (2b1cf2a), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_124.sh".
# Call 124: since the loops poll the ring and write its replies (a909c85) they do more a request, and
# four loops halved a request's wait for its loop in call 118 (one run each: 154.63 against 145.79):
# the defaults (three loops) against four and five, three alternated rounds.
source bench/device_unpack.sh /tmp/p124
for r in 1 2 3; do
  if (( r % 2 )); then vs="gpu gpu:io4 gpu:io5"; else vs="gpu:io5 gpu:io4 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call124.txt | grep -E '^==' | cut -c1-160
done
python3 bench/variants_table.py $OUT/rrt_call124.txt | tee $OUT/table_call124.md
echo "done at ${SECONDS}s"
