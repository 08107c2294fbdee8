set -uo pipefail
# Call 72: with fused runs (a motion's first states in one kernel), motions whose first batch is all their
# states on the device (--motion-probes 0) or 2 probes, against the default 4 probes (host lanes first), two
# rounds each, with the device runs' waits on the first round (gtrace).
P=/tmp/p72; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:gtrace gpu:pr0:gtrace gpu:pr2:gtrace gpu gpu:pr0 gpu:pr2 2>&1 | tee $OUT/rrt_call72.txt | grep -E '^==|of them|runs of'
echo "done at ${SECONDS}s"
