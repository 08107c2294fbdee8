set -uo pipefail
# Call 62: the planners' and tandemd's threads' waits for a core (thread_wait.sh); small jobs that may queue
# for a host thread (hq2), reply threads that poll 20 us (rs20), 2 I/O threads, loops polling 50 us; FCL 16.
P=/tmp/p62; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:hq2 gpu:rs20 gpu:io2 gpu:ls50 gpu:hq2:rs20 gpu 2>&1 | tee $OUT/rrt_call62.txt | grep -E '^==|WAITS|of them'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call62.txt
echo "done at ${SECONDS}s"
