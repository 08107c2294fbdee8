set -uo pipefail
# Call 40: more engine lanes with MotionCheck's any_state, with and without 2 I/O threads (the build
# of calls 37-39): the 64-planner row at --engine-lanes 4 and 5, the default (3) first and last;
# FCL's 16 planners.
P=/tmp/p40; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
mkdir -p $OUT/plans $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lanes4 gpu:lanes5 gpu:io2:lanes4 gpu:io2:lanes5 gpu:lanes5:hl3 gpu:io2:lanes5:hl3 gpu 2>&1 | tee $OUT/rrt_call40.txt | grep -E '^==|replies|of them|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>/dev/null; tail -1 $OUT/fcl16.txt
echo "done at ${SECONDS}s"
