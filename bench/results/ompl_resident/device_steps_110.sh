set -uo pipefail
# Written in the twenty-fifth session; the same pack as call 108 (4351020), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_110.sh".
# Call 110: with the ring polled by the loops, fewer polling threads: one reply thread (rt1), none
# (nodirect: the loops write every reply), and rt1 with a third host lane (hl3); against x1, three rounds.
source bench/device_unpack.sh /tmp/p110
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x1:xloop:rt1 gpu:x1 gpu:x1:xloop:nodirect gpu:x1:xloop:rt1:hl3 2>&1 | tee -a $OUT/rrt_call110.txt | grep -E '^==|of them|THREADS'
done
python3 bench/variants_table.py $OUT/rrt_call110.txt | tee $OUT/table_call110.md
echo "done at ${SECONDS}s"
