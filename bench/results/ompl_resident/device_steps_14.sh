set -uo pipefail
# Call 14 (fifteenth session): HEAD's GPU suites, the lock-free submit and sinks (38980a8) against the
# row, the loop's syscalls again, then bench/run_ompl.sh for the whole table in the time that is left.
P=/tmp/p14; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
echo "## TDM_TEST_IO_THREADS=2 test_robotd" >> $OUT/tests.txt; TDM_TEST_IO_THREADS=2 timeout 200 $P/new/bin/test_robotd >> $OUT/tests.txt 2>&1; echo "## TDM_TEST_IO_THREADS=2 test_robotd exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu 2>&1 | tee $OUT/rrt_lockfree.txt | grep -E '^==|replies|tandemd THREADS'
rm -rf /tmp/tp && mkdir -p /tmp/tp
$P/new/bin/tandemd --listen unix:/tmp/tp/s.sock --data-dir /tmp/tp/data --engine gpu --engine-lanes 5 --log-level warn 2>/tmp/tp/err & pid=$!
for i in $(seq 300); do [[ -S /tmp/tp/s.sock ]] && break; sleep 0.1; done
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:/tmp/tp/s.sock --per-scenario 30 $W/problems > $OUT/plan_strace.txt 2>/dev/null &
plan=$!
sleep 2
LD_LIBRARY_PATH=.strace timeout 2 .strace/strace -c -p $pid -o $OUT/strace_loop.txt 2>$OUT/strace.err
wait $plan; kill $pid; wait $pid 2>/dev/null
head -14 $OUT/strace_loop.txt
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>$OUT/fcl16.err; tail -1 $OUT/fcl16.txt
echo "row steps done at ${SECONDS}s"
common="OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
left=$((585 - SECONDS)); echo "run_ompl with ${left}s"
env $common timeout $left bash bench/run_ompl.sh $OUT/ompl_call14.md > /dev/null 2>$OUT/ompl_call14.err; echo "run_ompl exit $?"; grep -E '^\| (FCL|Tandem)' $OUT/ompl_call14.md
