set -uo pipefail
# Written in the twenty-fourth session. Run after a pack of the build with the new defaults
# (ARCHIVE=1 TESTS="robot_scene robotd daemon" OMPL=1 bench/device_pack.sh build .packs/new, a LINEINFO
# build: the same code), carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_105.sh".
# Call 105: tandemd's new defaults, --express-configs auto (1 with a GPU engine: a planner's single
# states that no host lane takes go to the express ring) and --express-blocks 16, after calls 101-104
# (x1 against the defaults in each: +2.5 %, +2.1-3.3 %, +2.5 %, +1.3 %). The suites that start tandemd
# with a GPU engine (robotd, daemon: now with the ring on) and robot_scene; then the goal in five
# alternated rounds at the new defaults; then one traced run to show the ring at work.
source bench/device_unpack.sh /tmp/p105
for t in robot_scene robotd daemon; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=5 THREADS=16 \
  bash bench/run_goal_rounds.sh $OUT/goal_rounds_call105.md 2>&1 | tail -12
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call105.txt | grep -E '^==|of them|express'
echo "done at ${SECONDS}s"
