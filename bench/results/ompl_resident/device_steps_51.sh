set -uo pipefail
# Call 51: the shared server lock with shared sinks, on main's working tree (= call 50's tandemd_sl):
# which defaults (I/O threads, loop polling, host lanes, probes, engine lanes), 64 RRTConnect
# planners through bench/run_rrt_variants.sh (dispatch trace), then FCL 16.
P=/tmp/p51; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:io3:ls200 gpu:io3:ls200:hl3 gpu:io3:ls200:hl4 gpu:io3:ls200:pr2 gpu:io2 gpu:io3:ls200:lanes4:hl3 gpu:io3 gpu:io3:ls200 2>&1 | grep -v "^  thread" | tee $OUT/rrt_call51.txt
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call51.txt
echo "done at ${SECONDS}s"
