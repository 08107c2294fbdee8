set -uo pipefail
# Written in the twenty-fifth session; the same pack as call 108 (4351020), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_112.sh".
# Call 112: call 111's x4 made the motions 28 % shorter in tandemd and the single states slower (the
# ring busier); here the host lanes take single states only (hc1), the probes going to the ring,
# against x1 and x1:xloop:rt1, three rounds.
source bench/device_unpack.sh /tmp/p112
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x4:xloop:rt1:hc1 gpu:x1 gpu:x4:xloop:rt1:hc1:xb64 gpu:x1:xloop:rt1 gpu:x4:xloop:rt1:xb64 2>&1 | tee -a $OUT/rrt_call112.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call112.txt | tee $OUT/table_call112.md
echo "done at ${SECONDS}s"
