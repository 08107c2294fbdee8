set -uo pipefail
# Written in the twenty-ninth session. Run with call 141's pack of 4dfe2c1 (ARCHIVE=1 TESTS="robotd pooler
# robot_scene" OMPL=1 bench/device_pack.sh build .packs/new; HEAD's later commits change only bench
# scripts and results), carrying [".packs", ".panda"]:
# device run "CALL=148 bash bench/results/ompl_resident/device_steps_148.sh".
# Calls 148 onwards: the goal's alternated rounds at the defaults on fresh machines (each call after a
# give_back), eight rounds a host, for the ratio's spread over more hosts.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%|Host" $OUT/goal_rounds_call$CALL.md
echo "done at ${SECONDS}s"
