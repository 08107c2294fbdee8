set -uo pipefail
nvidia-smi -L
P=/tmp/p8; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
SAVE_DIR=$OUT PLANNER=rrtconnect-fused PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu 2>&1 | tee $OUT/rrt_fused.txt | grep -E '^==|replies'
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 2>&1 | tee $OUT/rrt_plain.txt | grep -E '^==|replies'
for p in rrtconnect rrtconnect-fused; do $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner $p --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16_$p.txt 2>$OUT/fcl16_$p.err; tail -1 $OUT/fcl16_$p.txt; done
for p in rrtconnect rrtconnect-fused; do $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner $p --time-limit 2 --planners 1 --checker fcl --per-scenario 3 $W/problems > $OUT/fcl1_$p.txt 2>&1; tail -1 $OUT/fcl1_$p.txt; done
