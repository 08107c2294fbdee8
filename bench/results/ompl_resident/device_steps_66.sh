set -uo pipefail
# Call 66: the session's final build (5ec5aeb: reply threads, scenes built before the writer): the GPU
# suites (robotd, daemon, limits, and daemon with --reply-threads 0: the lanes writing their replies), the
# 64-planner row against --reply-threads 0, two pairs, FCL's 16 planners, then bench/run_ompl.sh's whole
# table at tandemd's defaults.
P=/tmp/p66; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robotd daemon limits daemon:0; do n=${t%%:*}; rt=; [[ $t == *:0 ]] && rt=0; echo "## test_$n reply-threads ${rt:-default} (exit code after)" >> $OUT/tests.txt; TDM_TEST_REPLY_THREADS=$rt timeout 200 $P/new/bin/test_$n >> $OUT/tests.txt 2>&1; echo "## test_$n reply-threads ${rt:-default} exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:rt0 gpu gpu:rt0 2>&1 | tee $OUT/rrt_call66.txt | grep -E '^==|of them'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call66.txt
echo "rows done at ${SECONDS}s"
env OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1 bash bench/run_ompl.sh $OUT/ompl_call66.md > $OUT/run_ompl.log 2>&1; tail -22 $OUT/ompl_call66.md
echo "done at ${SECONDS}s"
