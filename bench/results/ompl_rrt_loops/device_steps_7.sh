set -uo pipefail
nvidia-smi -L
P=/tmp/p7; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu:lanes5:conns32 gpu:lanes8:conns32 gpu:conns32 2>&1 | tee $OUT/rrt_conns.txt | grep -E '^==|replies'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>$OUT/fcl16.err; tail -1 $OUT/fcl16.txt
