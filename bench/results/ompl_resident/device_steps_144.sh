set -uo pipefail
# Written in the twenty-eighth session. Run after call 141's pack of 4dfe2c1 (ARCHIVE=1 TESTS="robotd pooler
# robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_144.sh".
# Call 144: no reply threads (rt0: the lanes and host lanes write their replies themselves, no hand-over,
# two polling threads fewer), the best row of call 135 and not tried since, against the defaults (two
# reply threads), and rt0 with a third host lane on one of the cores it frees (rt0:hl3); four alternated
# rounds.
source bench/device_unpack.sh /tmp/p144
for r in 1 2 3 4; do
  if (( r % 2 )); then vs="gpu gpu:rt0 gpu:rt0:hl3"; else vs="gpu:rt0:hl3 gpu:rt0 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call144.txt | grep -E '^==|of them' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call144.txt | tee $OUT/table_call144.md
echo "done at ${SECONDS}s"
