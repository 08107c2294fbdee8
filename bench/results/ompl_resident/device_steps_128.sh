set -uo pipefail
# Written in the twenty-seventh session. Run after a pack of the robot_scene test change (ARCHIVE=1
# TESTS="robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_128.sh".
# Call 128: the async lanes' robot_scene tests (jobs of 64 configurations); then the defaults against
# async lanes with two lanes of three slots, with a third host lane on the core they free, and with one
# lane of four slots and three host lanes; three alternated rounds.
source bench/device_unpack.sh /tmp/p128
timeout 200 $P/new/bin/test_robot_scene --filter '*/pooled_*' --verbose 2>&1 | grep -E "async runs|PASS|FAIL|SKIP|Synthesis" | tee $OUT/tests.txt
echo "tests done at ${SECONDS}s"
for r in 1 2 3; do
  if (( r % 2 )); then vs="gpu gpu:async:lanes2:st3 gpu:async:lanes2:st3:hl3 gpu:async:lanes1:st4:hl3"; else vs="gpu:async:lanes1:st4:hl3 gpu:async:lanes2:st3:hl3 gpu:async:lanes2:st3 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call128.txt | grep -E '^==' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call128.txt | tee $OUT/table_call128.md
echo "done at ${SECONDS}s"
