set -uo pipefail
# Written in the twenty-fifth session. Run after a pack of f4d9fe4 (tdm_query_sink_poll)
# (ARCHIVE=1 TESTS="robotd" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_113.sh".
# Call 113: a loop now polls its ring jobs between its connections' reads too; robotd's planners;
# x1, x1:xloop:rt1, x4:xloop:rt1:xb64, x4:xloop:rt1:hc1:xb64, three rounds.
source bench/device_unpack.sh /tmp/p113
timeout 240 $P/new/bin/test_robotd --filter 'robotd/planners*' > $OUT/tests.txt 2>&1; echo "## test_robotd exit $?" >> $OUT/tests.txt
grep -E "Synthesis|exit" $OUT/tests.txt
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x1:xloop:rt1 gpu:x4:xloop:rt1:xb64 gpu:x1 gpu:x4:xloop:rt1:hc1:xb64 2>&1 | tee -a $OUT/rrt_call113.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call113.txt | tee $OUT/table_call113.md
echo "done at ${SECONDS}s"
