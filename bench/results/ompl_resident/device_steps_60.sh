set -uo pipefail
# Call 60: the build of call 59 (reply threads, scenes built before the writer): the knobs again now that
# the lanes write no replies: 4 lanes, 3 host lanes, 1 reply thread, both; FCL 16. No suites (call 59's build).
P=/tmp/p60; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lanes4 gpu:hl3 gpu:rt1 gpu:lanes4:hl3 gpu 2>&1 | tee $OUT/rrt_call60.txt | grep -E '^==|writer robot|of them'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call60.txt
echo "done at ${SECONDS}s"
