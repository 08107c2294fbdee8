set -uo pipefail
# Run after bench/device_prepare.sh (the build at HEAD packed into .packs, the Panda into .panda), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_92.sh".
# Call 92 (prepared in the twenty-second session, which had no device time): the build at HEAD
# (1fd75d6's pooler change to the express thread never ran on a GPU): every suite with GPU tests; then
# the goal in five alternated rounds (bench/run_goal_rounds.sh) at tandemd's defaults.
P=/tmp/p92; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in gpu robot_scene scheduler pooler robotd daemon; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=5 THREADS=16 \
  bash bench/run_goal_rounds.sh $OUT/goal_rounds_call92.md 2>&1 | tail -12
echo "done at ${SECONDS}s"
