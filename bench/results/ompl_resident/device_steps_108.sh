set -uo pipefail
# Written in the twenty-fifth session. Run after a pack of the working tree's build (ARCHIVE=1
# TESTS="robotd robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_108.sh".
# Call 108: the express ring polled by the loops (TDM_EXPRESS_ON_LOOP=1, variant xloop): robotd's
# planners through the ring (polled by the express thread and by the loops); then x1 against x1:xloop,
# three rounds alternated.
source bench/device_unpack.sh /tmp/p108
echo "## test_robotd (exit code after)" >> $OUT/tests.txt
timeout 240 $P/new/bin/test_robotd --filter 'robotd/planners*' --verbose >> $OUT/tests.txt 2>&1; echo "## test_robotd exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit|FAIL|PASS" $OUT/tests.txt
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:x1 gpu:x1:xloop 2>&1 | tee -a $OUT/rrt_call108.txt | grep -E '^==|of them|express|THREADS'
done
python3 bench/variants_table.py $OUT/rrt_call108.txt | tee $OUT/table_call108.md
echo "done at ${SECONDS}s"
