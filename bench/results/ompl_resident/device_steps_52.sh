set -uo pipefail
# Call 52: the session's final build (the shared server lock with shared sinks; --io-threads 3 and
# --loop-spin-us auto by default): the GPU suites that touch it (robotd, daemon at the defaults, and
# both with --io-threads 0), the 64-planner row at the new defaults and at the old ones (io0: one
# loop, ls0: no polling), interleaved, FCL's 16 planners, then bench/run_ompl.sh's whole table at
# tandemd's defaults.
P=/tmp/p52; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robotd daemon robotd:0 daemon:0; do n=${t%%:*}; io=; [[ $t == *:0 ]] && io=0; echo "## test_$n io-threads ${io:-default} (exit code after)" >> $OUT/tests.txt; TDM_TEST_IO_THREADS=$io timeout 200 $P/new/bin/test_$n >> $OUT/tests.txt 2>&1; echo "## test_$n io-threads ${io:-default} exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:io0:ls0 gpu gpu:io0:ls0 2>&1 | grep -v "^  thread" | tee $OUT/rrt_call52.txt | grep -E '^==|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call52.txt
echo "rows done at ${SECONDS}s"
env OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1 bash bench/run_ompl.sh $OUT/ompl_call52.md > $OUT/run_ompl.log 2>&1; tail -22 $OUT/ompl_call52.md
echo "done at ${SECONDS}s"
