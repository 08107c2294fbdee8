set -uo pipefail
# Written in the twenty-fourth session. Run after a pack of 110d957's build (ARCHIVE=1 TESTS="robotd
# daemon scheduler pooler" OMPL=1 bench/device_pack.sh build .packs/new; a LINEINFO build: the same
# code), carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_107.sh".
# Call 107: the suites with GPU tests that call 106 did not run on 110d957 (robotd and daemon start
# tandemd with the ring on by default now), then the goal in three alternated rounds at the new defaults.
source bench/device_unpack.sh /tmp/p107
for t in robotd daemon scheduler pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=3 THREADS=16 \
  bash bench/run_goal_rounds.sh $OUT/goal_rounds_call107.md 2>&1 | tail -10
echo "done at ${SECONDS}s"
