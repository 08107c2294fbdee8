set -uo pipefail
# Call 18: around the best of call 17 (5 engine lanes, 2 host lanes): motion windows, engine and host
# lanes, longer polls, smaller host jobs; FCL 16; the reference variant again at the end (drift).
P=/tmp/p18; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu:lanes5:w128 gpu:lanes5:w256 gpu:lanes6 gpu:lanes4 gpu:lanes5:hl3 gpu:lanes5:spin1000 gpu:lanes5:hc2 2>&1 | tee $OUT/rrt_sweep.txt | grep -E '^==|replies|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>/dev/null; tail -1 $OUT/fcl16.txt
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 2>&1 | tee $OUT/rrt_sweep_end.txt | grep -E '^==|replies|tandemd THREADS'
echo "done at ${SECONDS}s"
