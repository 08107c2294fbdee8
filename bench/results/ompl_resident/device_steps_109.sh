set -uo pipefail
# Written in the twenty-fifth session; the same pack as call 108 (4351020), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_109.sh".
# Call 109: call 108's xloop again, its order turned (xloop first), and xloop with one reply thread
# (rt1: the loops now write the ring's replies), four rounds.
source bench/device_unpack.sh /tmp/p109
for r in 1 2 3 4; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x1:xloop gpu:x1 gpu:x1:xloop:rt1 2>&1 | tee -a $OUT/rrt_call109.txt | grep -E '^==|of them'
done
python3 bench/variants_table.py $OUT/rrt_call109.txt | tee $OUT/table_call109.md
echo "done at ${SECONDS}s"
