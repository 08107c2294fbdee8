set -uo pipefail
# Written in the twenty-fifth session. Run after a pack of a909c85's build (the ring polled by the
# loops by default, --reply-threads auto 1 with it; ARCHIVE=1 TESTS="robotd daemon pooler" OMPL=1
# bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_116.sh".
# Call 116: robotd, daemon, pooler at the new defaults; the goal in three rounds; the new defaults
# against the old (xthread: the ring's own thread, two reply threads), three rounds.
source bench/device_unpack.sh /tmp/p116
for t in robotd daemon pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call116.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\| [0-9]|median" $OUT/goal_rounds_call116.md
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:xthread:rt2 2>&1 | tee -a $OUT/rrt_call116.txt | grep -E '^==' | cut -c1-160
done
python3 bench/variants_table.py $OUT/rrt_call116.txt | tee $OUT/table_call116.md
echo "done at ${SECONDS}s"
