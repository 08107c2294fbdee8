set -uo pipefail
P=/tmp/p7; mkdir -p $P/new
[[ -x $P/new/bin/tandemd ]] || tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu:lanes5:mbt16384 gpu:lanes5:mbt4096 gpu:mbt4096 2>&1 | tee $OUT/rrt_batch_cap.txt | grep -E '^==|replies|thread [0-9]'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>$OUT/fcl16.err; tail -1 $OUT/fcl16.txt
