set -uo pipefail
# Written in the twenty-fourth session. Run with the pack of call 100 (LINEINFO=1 build, OMPL=1 TESTS=""),
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_102.sh".
# Call 102: call 101 put x1:xb64 (single states that no host thread takes to the express ring) at
# 159.48 problems/s against the defaults' 155.63 (three rounds): a state from the planners' side 0.138 ms
# against 0.218, but a motion 0.343 against 0.304, the lanes' batches 0.114 ms against 0.102 beside the
# ring's resident blocks. The ring took ~56 000 configurations a second, ~25 us each: ~1.4 blocks busy
# on average, so 64 (or 32) resident blocks are mostly idle pollers. Fewer: 8 and 16, against 64 and the
# defaults, three rounds alternated.
source bench/device_unpack.sh /tmp/p102
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x1:xb8 gpu:x1:xb16 gpu:x1:xb64 2>&1 | tee -a $OUT/rrt_call102.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call102.txt | tee $OUT/table_call102.md
echo "done at ${SECONDS}s"
