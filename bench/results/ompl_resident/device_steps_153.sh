set -uo pipefail
# Written in the twenty-ninth session. Run with call 152's pack (the tree arena's tree; ARCHIVE=1
# TESTS="robotd pooler" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_153.sh".
# Call 153: the row with the tree arena (the default) against TDM_GPU_MESH_ARENA=0, six alternated
# rounds without traces.
source bench/device_unpack.sh /tmp/p153
for r in 1 2 3 4 5 6; do
  if (( r % 2 )); then vs="gpu gpu:arena0"; else vs="gpu:arena0 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call153.txt | grep -E '^==|writer (scene delete|robot scene put):' | cut -c1-240
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call153.txt | tee $OUT/table_call153.md
echo "done at ${SECONDS}s"
