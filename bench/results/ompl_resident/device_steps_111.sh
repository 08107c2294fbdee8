set -uo pipefail
# Written in the twenty-fifth session; the same pack as call 108 (4351020), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_111.sh".
# Call 111: with the ring polled by the loops (no express thread to take a core), the motions' probes
# into the ring too (x4; call 101 measured it with the thread), and rounds of up to 16 states (x16),
# 16 and 64 blocks; against x1:xloop:rt1 and x1, three rounds.
source bench/device_unpack.sh /tmp/p111
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x4:xloop:rt1 gpu:x1 gpu:x1:xloop:rt1 gpu:x4:xloop:rt1:xb64 gpu:x16:xloop:rt1:xb64 2>&1 | tee -a $OUT/rrt_call111.txt | grep -E '^==|of them|THREADS|express'
done
python3 bench/variants_table.py $OUT/rrt_call111.txt | tee $OUT/table_call111.md
echo "done at ${SECONDS}s"
