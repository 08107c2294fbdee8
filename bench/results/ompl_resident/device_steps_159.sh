set -uo pipefail
# Written in the thirtieth session. Run after a pack of the writer's staging (ARCHIVE=1 TESTS="" OMPL=1
# bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_159.sh".
# Call 159 (and 160, the same steps with CALL=160 after the builder's queue): call 158's churn (two loops putting and deleting a sphere of 250 000 and one of 320 000
# triangles through `tandem mesh` while 64 planners run): a large mesh's file written on the writer's
# builder thread and a deleted one's unlinked there (the default now) against TDM_WRITER_STAGE=0 (both
# on the writer, as at call 158), two alternated rounds; the writer's trace says where its time went.
CALL=${CALL:-159}
source bench/device_unpack.sh /tmp/p$CALL
python3 bench/sphere_obj.py 250000 0.5 /tmp/s250.obj; python3 bench/sphere_obj.py 320000 0.6 /tmp/s320.obj
df -h . /tmp | tail -2
for r in 1 2; do
  if (( r % 2 )); then vs="gpu gpu:stage0"; else vs="gpu:stage0 gpu"; fi
  CHURN="/tmp/s250.obj /tmp/s320.obj" PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call$CALL.txt | grep -E '^==|churn|writer' | cut -c1-240
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt | tee $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
