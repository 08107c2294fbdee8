set -uo pipefail
# Written in the twenty-fourth session. Run with the pack of call 100 (LINEINFO=1 build, OMPL=1 TESTS=""),
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_103.sh".
# Call 103: in call 102 the ring's block count did not matter (x1 with 8, 16, 64 blocks: 155.69, 157.46,
# 156.97 against the defaults' 152.49), and a motion stayed ~0.02-0.03 ms slower in tandemd: the lanes wait
# longer for a core (tdm-dispatch 500-620 ms of 1.5 s against 450) beside the express thread's polling
# (80-85 % of a core). Each variant here gives a polling core back: one reply thread (rt1), two I/O
# loops (io2), one host lane (hl1); three rounds alternated, against x1:xb16 and the defaults.
source bench/device_unpack.sh /tmp/p103
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x1:xb16 gpu:x1:xb16:rt1 gpu:x1:xb16:io2 gpu:x1:xb16:hl1 2>&1 | tee -a $OUT/rrt_call103.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call103.txt | tee $OUT/table_call103.md
echo "done at ${SECONDS}s"
