set -uo pipefail
# Written in the thirtieth session. Run after a pack of 1a1b4af (ARCHIVE=1 TESTS="" OMPL=1
# bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "CALL=161 bash bench/results/ompl_resident/device_steps_161.sh".
# Call 161: 64 planners while two loops put and delete meshes of 60 000 and 64 000 triangles (under the
# builder's old threshold of 65 536: built on the writer before 1a1b4af), against no churn, one run
# each; then the goal's alternated rounds at the defaults, eight, on a fresh machine.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
python3 bench/sphere_obj.py 60000 0.5 /tmp/s60.obj; python3 bench/sphere_obj.py 64000 0.6 /tmp/s64.obj
CHURN="/tmp/s60.obj /tmp/s64.obj" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|churn|writer' | cut -c1-240
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|writer (scene|robot scene put:)' | cut -c1-240
echo "churn done at ${SECONDS}s"
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%|Host" $OUT/goal_rounds_call$CALL.md
echo "done at ${SECONDS}s"
