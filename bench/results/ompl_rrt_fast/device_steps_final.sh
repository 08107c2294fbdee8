set -uo pipefail
nvidia-smi -L
P=/tmp/p14; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PANDA=$PWD/.panda OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd ENGINES=gpu SINGLE_PER_SCENARIO=3 bash bench/run_ompl.sh $OUT/ompl.md > $OUT/ompl.log 2>&1; echo "run_ompl exit $?"; grep "^|" $OUT/ompl.md | head -20
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu 2>&1 | tee $OUT/rrt_final.txt
