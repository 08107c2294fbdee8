set -uo pipefail
# Call 61: where a lane's 0.1 ms in the engine goes: TDM_GPU_TRACE (each device run's time in the GPU engine
# and its wait for the device, by size) and TDM_GPU_PROFILE (device stages; no CUDA graphs). Call 59's build.
P=/tmp/p61; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:gtrace gpu:prof 2>&1 | tee $OUT/rrt_call61.txt | grep -E '^==|gpu engine runs|gpu runs of|thread [0-9]'
echo "done at ${SECONDS}s"
