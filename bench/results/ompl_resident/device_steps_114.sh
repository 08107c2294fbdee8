set -uo pipefail
# Written in the twenty-fifth session; the same pack as call 113 (f4d9fe4), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_114.sh".
# Call 114: with x4 (the probes in the ring) a motion took half the time in tandemd (call 113) but the
# planners saw less of it: the loops, which now finish those rounds, read later. More loops (io4, io5),
# fewer lanes (lanes2: the lanes now take only the motions' later rounds); against x1, three rounds.
source bench/device_unpack.sh /tmp/p114
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x4:xloop:rt1:xb64:io4 gpu:x1 gpu:x4:xloop:rt1:xb64:io5:lanes2 gpu:x4:xloop:rt1:xb64:io4:lanes2 gpu:x1:xloop:rt1 2>&1 | tee -a $OUT/rrt_call114.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call114.txt | tee $OUT/table_call114.md
echo "done at ${SECONDS}s"
