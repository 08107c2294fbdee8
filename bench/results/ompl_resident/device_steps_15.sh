set -uo pipefail
# Call 15: the wake-ups (9452c64) and the validity checks' share of the planners' time (state_s).
P=/tmp/p15; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu 2>&1 | tee $OUT/rrt_wake.txt | grep -E '^==|replies|tandemd THREADS'
rm -rf /tmp/tp && mkdir -p /tmp/tp
$P/new/bin/tandemd --listen unix:/tmp/tp/s.sock --data-dir /tmp/tp/data --engine gpu --engine-lanes 5 --log-level warn 2>/tmp/tp/err & pid=$!
for i in $(seq 300); do [[ -S /tmp/tp/s.sock ]] && break; sleep 0.1; done
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:/tmp/tp/s.sock --per-scenario 30 $W/problems > $OUT/plan_strace.txt 2>/dev/null &
plan=$!
sleep 2
LD_LIBRARY_PATH=.strace timeout 2 .strace/strace -c -p $pid -o $OUT/strace_loop.txt 2>/dev/null
wait $plan; kill $pid; wait $pid 2>/dev/null
head -14 $OUT/strace_loop.txt
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>$OUT/fcl16.err; tail -1 $OUT/fcl16.txt
echo "row steps done at ${SECONDS}s"
