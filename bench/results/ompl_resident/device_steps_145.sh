set -uo pipefail
# Written in the twenty-eighth session. Run after call 141's pack of 4dfe2c1 (ARCHIVE=1 TESTS="robotd pooler
# robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_145.sh".
# Call 145: call 142 again on a fresh machine (given back after call 144), six rounds, for the
# ratio's spread over hosts.
source bench/device_unpack.sh /tmp/p145
OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=6 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call145.md > $OUT/goal.log 2>&1; echo "goal exit $?"
grep -E "^\\| [0-9]|median|busy|%" $OUT/goal_rounds_call145.md
echo "done at ${SECONDS}s"
