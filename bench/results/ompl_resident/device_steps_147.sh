set -uo pipefail
# Written in the twenty-eighth session. Run after call 141's pack of 4dfe2c1 (ARCHIVE=1 TESTS="robotd pooler
# robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_147.sh".
# Call 147: call 144 again on a fresh machine, with a third host lane beside two reply threads too (hl3):
# does rt0:hl3 (+2.7 % in call 144, one of its runs high) hold, and is it the third host lane alone?
source bench/device_unpack.sh /tmp/p147
for r in 1 2 3 4; do
  if (( r % 2 )); then vs="gpu gpu:rt0:hl3 gpu:hl3"; else vs="gpu:hl3 gpu:rt0:hl3 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call147.txt | grep -E '^==|of them' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call147.txt | tee $OUT/table_call147.md
echo "done at ${SECONDS}s"
