set -uo pipefail
# Call 56: with the CPU engine's early stop (host lanes' checks cheaper), more host lanes again:
# 64 RRTConnect planners at the defaults, with 4 and 3 host lanes, interleaved; FCL 16.
P=/tmp/p56; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:hl4 gpu gpu:hl4 gpu:hl3 2>&1 | grep -v "^  thread" | tee $OUT/rrt_call56.txt | grep -E '^==|of them'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call56.txt
echo "done at ${SECONDS}s"
