set -uo pipefail
# Call 20: the host lanes' budget cut (the commit before this file's): test_robot_scene, the row at
# 3 and 5 engine lanes, with 2 I/O threads, FCL 16, then bench/run_ompl.sh with tandemd's defaults.
P=/tmp/p20; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
timeout 200 $P/new/bin/test_robot_scene --verbose > $OUT/tests.txt 2>&1; echo "## test_robot_scene exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit|FAIL|jobs on the host" $OUT/tests.txt
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lanes5 gpu:lanes5:io2 2>&1 | tee $OUT/rrt_cut.txt | grep -E '^==|replies|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>/dev/null; tail -1 $OUT/fcl16.txt
common="OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
left=$((585 - SECONDS)); echo "run_ompl with ${left}s"
env $common timeout $left bash bench/run_ompl.sh $OUT/ompl_call20.md > /dev/null 2>$OUT/ompl_call20.err; echo "run_ompl exit $?"; grep -E '^\| (FCL|Tandem)' $OUT/ompl_call20.md
