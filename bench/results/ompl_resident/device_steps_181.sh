set -uo pipefail
# Written in the thirty-second session. Run after a pack of 1d0058f (the session's last code; ARCHIVE=1
# OMPL=1 TESTS="robotd daemon limits pooler" bench/device_pack.sh build .packs/new; then rm -rf
# .packs/new), carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_181.sh".
# Call 181: the session's last code with the GPU build on a fresh machine: robotd, daemon, limits, pooler;
# then the goal in eight alternated rounds at the defaults (as device_steps_148.sh).
source bench/device_unpack.sh /tmp/p181
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in robotd daemon limits pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call181.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%|Host" $OUT/goal_rounds_call181.md
echo "done at ${SECONDS}s"
