set -uo pipefail
# Call 28: with block runs up to 1M entries (the commit before this file's), the knobs again: engine
# lanes 3 (default), 4, 5; the motions' first window 64 (default) and 128; host lanes 2 (default) and 4;
# FCL's 16 planners; then bench/run_ompl.sh's whole table at tandemd's defaults.
P=/tmp/p28; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
mkdir -p $OUT/plans $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lanes4 gpu:lanes5 gpu:w128 gpu:lanes5:w128 gpu:hl4 gpu 2>&1 | tee $OUT/rrt_call28.txt | grep -E '^==|replies'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16.txt 2>/dev/null; tail -1 $OUT/plans/fcl16.txt
cp $P/plans/plan_gpu_64.txt $OUT/plans/
echo "sweep done at ${SECONDS}s"
common="OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
left=$((585 - SECONDS)); echo "run_ompl with ${left}s"
env $common timeout $left bash bench/run_ompl.sh $OUT/ompl_call28.md > /dev/null 2>$OUT/ompl_call28.err; echo "run_ompl exit $?"; grep -E '^\| (FCL|Tandem)' $OUT/ompl_call28.md
echo "done at ${SECONDS}s"
