set -uo pipefail
# Call 43: do the threads that poll (the lanes waiting for the device in the driver, the pooler's
# threads waiting for work) hold back the planners' own threads? The 64-planner row (build 3fe8985)
# with the lanes sleeping in the driver (TDM_GPU_BLOCKING_SYNC=1), with the pooler's threads not
# polling (TDM_POOLER_SPIN_US=0), both; the default first and last.
P=/tmp/p43; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
mkdir -p $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:block:spin0 gpu:block gpu:spin0 gpu 2>&1 | tee $OUT/rrt_call43.txt | grep -E '^==|replies|of them|tandemd THREADS|ompl_plan THREADS'
echo "done at ${SECONDS}s"
