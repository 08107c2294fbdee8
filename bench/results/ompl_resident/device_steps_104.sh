set -uo pipefail
# Written in the twenty-fourth session. Run with the pack of call 100 (LINEINFO=1 build, OMPL=1 TESTS=""),
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_104.sh".
# Call 104: in call 103, x1:xb16 161.35 problems/s against the defaults' 157.46, and with a polling core
# given back 164.69 (two I/O loops) and 164.11 (one host lane); one reply thread lost (149.01). Both
# together, against each alone and the defaults, three rounds alternated.
source bench/device_unpack.sh /tmp/p104
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x1:xb16:io2 gpu:x1:xb16:hl1 gpu:x1:xb16:io2:hl1 2>&1 | tee -a $OUT/rrt_call104.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call104.txt | tee $OUT/table_call104.md
echo "done at ${SECONDS}s"
