set -uo pipefail
# Call 63: polling threads that yield their core (sched_yield; sy0: not, as before), three pairs; FCL 16;
# the suites robotd and daemon.
P=/tmp/p63; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:sy0 gpu gpu:sy0 gpu gpu:sy0 2>&1 | tee $OUT/rrt_call63.txt | grep -E '^==|WAITS|of them'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call63.txt
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 150 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "done at ${SECONDS}s"
