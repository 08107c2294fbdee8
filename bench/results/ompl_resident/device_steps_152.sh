set -uo pipefail
# Written in the twenty-ninth session. Run after a pack of the same tree (ARCHIVE=1 TESTS="robotd pooler"
# OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_152.sh".
# Call 152: robotd and pooler with the tree arena; then 64 planners with each tree's upload and free
# timed (mtrace), the arena against TDM_GPU_MESH_ARENA=0 (cudaMalloc and cudaFree per array, which wait
# for the device: bench/free_stall.cu), two alternated rounds: the frees' times, the scenes' set-up
# (setup_s), the writer's deletes, the row.
source bench/device_unpack.sh /tmp/p152
for t in robotd pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
for r in 1 2; do
  if (( r % 2 )); then vs="gpu:mtrace gpu:mtrace:arena0"; else vs="gpu:mtrace:arena0 gpu:mtrace"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call152.txt | grep -E '^==|of them|mesh (upload|free)|writer (scene delete|robot scene put):' | cut -c1-240
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call152.txt | tee $OUT/table_call152.md
echo "done at ${SECONDS}s"
