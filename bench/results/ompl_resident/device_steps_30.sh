set -uo pipefail
# Call 30: rrtconnect-fused (examples/ompl/rrt_fused.h: RRTConnect asking the motion check alone, the
# same trees) against OMPL's RRTConnect, both checkers, now that a pooled run is half as long (call 26):
# a state request is now ~a quarter of the planners' time, each a round trip for ~17 us of work.
P=/tmp/p30; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
mkdir -p $OUT/plans $P/plans
for pl in rrtconnect-fused rrtconnect; do
  PLANNER=$pl SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call30.txt | grep -E '^==|replies'
  cp $P/plans/plan_gpu_64.txt $OUT/plans/plan64_$pl.txt
  $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner $pl --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16_$pl.txt 2>/dev/null; tail -1 $OUT/plans/fcl16_$pl.txt
done
echo "done at ${SECONDS}s"
