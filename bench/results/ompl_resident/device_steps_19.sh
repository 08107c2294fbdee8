set -uo pipefail
# Call 19: HEAD's GPU suites (host lanes on by default), the pooled device path against the CPU
# engine, and bench/run_ompl.sh's whole table with tandemd's defaults.
P=/tmp/p19; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t --verbose >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
echo "## TDM_TEST_IO_THREADS=2 test_robotd" >> $OUT/tests.txt; TDM_TEST_IO_THREADS=2 timeout 200 $P/new/bin/test_robotd >> $OUT/tests.txt 2>&1; echo "## TDM_TEST_IO_THREADS=2 test_robotd exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
$L --verify --repeat 20 --threads 2 --lanes 2 --shapes 1:1,8:32 $worlds > $OUT/verify_out.txt 2>&1; grep -E "verify|rror" $OUT/verify_out.txt
common="OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
left=$((585 - SECONDS)); echo "run_ompl with ${left}s"
env $common timeout $left bash bench/run_ompl.sh $OUT/ompl_call19.md > /dev/null 2>$OUT/ompl_call19.err; echo "run_ompl exit $?"; grep -E '^\| (FCL|Tandem)' $OUT/ompl_call19.md
