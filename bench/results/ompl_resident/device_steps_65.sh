set -uo pipefail
# Call 65: more of the single states on the CPU: 3-4 host lanes with small jobs allowed to queue for them
# (hqN), host lanes for single configurations only (hc1), against the defaults (first and last). Call 64's build.
P=/tmp/p65; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:hl3:hq2 gpu:hl4:hq2:io2 gpu:hc1:hl3 gpu:hl3:hq4 gpu 2>&1 | tee $OUT/rrt_call65.txt | grep -E '^==|WAITS|of them'
echo "done at ${SECONDS}s"
