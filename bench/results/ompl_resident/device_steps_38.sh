set -uo pipefail
# Call 38: host lanes for a motion's probes and the single states (the build of call 37): the 64-planner
# row with 2 I/O threads and 4, 6 or 8 host lanes, --host-configs 1 (single states only) or 8, the
# pooler's threads not polling for work (spin0), 2 probes; the default first and last; FCL's 16 planners.
P=/tmp/p38; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
mkdir -p $OUT/plans $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:io2:hl4:hc1 gpu:io2:hl6 gpu:io2:hl8 gpu:io2:hl6:hc1 gpu:io2:hl8:spin0 gpu:io2:hl6:pr2 gpu:io2:hl4:hc1 gpu 2>&1 | tee $OUT/rrt_call38.txt | grep -E '^==|replies|of them|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>/dev/null; tail -1 $OUT/fcl16.txt
echo "done at ${SECONDS}s"
