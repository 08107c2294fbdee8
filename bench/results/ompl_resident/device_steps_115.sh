set -uo pipefail
# Written in the twenty-fifth session. Run after a pack of 371fd25's build (the ring kept by one loop
# at most every 50 us; ARCHIVE=1 TESTS="robotd daemon pooler" OMPL=1 bench/device_pack.sh build
# .packs/new), carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_115.sh".
# Call 115: robotd, daemon, pooler; then x4:xloop:rt1:xb64:io4:lanes2 and x1:xloop:rt1 against x1,
# three rounds.
source bench/device_unpack.sh /tmp/p115
for t in robotd daemon pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x4:xloop:rt1:xb64:io4:lanes2 gpu:x1 gpu:x1:xloop:rt1 2>&1 | tee -a $OUT/rrt_call115.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call115.txt | tee $OUT/table_call115.md
echo "done at ${SECONDS}s"
