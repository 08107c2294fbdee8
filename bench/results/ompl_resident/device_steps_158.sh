set -uo pipefail
# Written in the thirtieth session. Run after a pack of the spares' switch (ARCHIVE=1 TESTS="" OMPL=1
# bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_158.sh".
# Call 158: 64 planners while two loops put and delete a large mesh each (spheres of 250 000 and
# 320 000 triangles, trees of ~30-40 MiB: chunks of their own) through `tandem mesh`, as a tenant
# churning meshes would; each tree's upload and free timed (mtrace); the spare chunks (the default)
# against TDM_GPU_MESH_SPARES=0 (each large tree's chunk given back with cudaFree when it leaves, as
# at e75c773), two alternated rounds; then the defaults without the churn, once.
source bench/device_unpack.sh /tmp/p158
python3 bench/sphere_obj.py 250000 0.5 /tmp/s250.obj; python3 bench/sphere_obj.py 320000 0.6 /tmp/s320.obj
for r in 1 2; do
  if (( r % 2 )); then vs="gpu:mtrace gpu:mtrace:spares0"; else vs="gpu:mtrace:spares0 gpu:mtrace"; fi
  CHURN="/tmp/s250.obj /tmp/s320.obj" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call158.txt | grep -E '^==|churn|gpu mesh' | cut -c1-240
  echo "round $r done at ${SECONDS}s"
done
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:mtrace 2>&1 | tee -a $OUT/rrt_call158.txt | grep -E '^==|gpu mesh' | cut -c1-240
python3 bench/variants_table.py $OUT/rrt_call158.txt | tee $OUT/table_call158.md
echo "done at ${SECONDS}s"
