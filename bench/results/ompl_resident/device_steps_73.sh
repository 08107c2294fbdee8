set -uo pipefail
# Call 73: tandemd under nice 5 and 10 (its polling threads yield to the planners' threads on a busy core)
# against nice 0, two rounds each.
P=/tmp/p73; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:nice5 gpu:nice10 gpu gpu:nice5 gpu:nice10 2>&1 | tee $OUT/rrt_call73.txt | grep -E '^==|of them|WAITS'
echo "done at ${SECONDS}s"
