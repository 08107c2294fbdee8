set -uo pipefail
# Call 77: tandemd on cores of its own (taskset: 0-7 or 0-9), the planners on the others, against no pinning,
# two rounds: do the planners wait for cores behind tandemd's polling threads, or for idle cores to wake?
P=/tmp/p77; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:cpu0-7 gpu:cpu0-9 gpu gpu:cpu0-7 gpu:cpu0-9 2>&1 | tee $OUT/rrt_call77.txt | grep -E '^==|WAITS|of them'
echo "done at ${SECONDS}s"
