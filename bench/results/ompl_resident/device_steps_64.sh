set -uo pipefail
# Call 64: the reverted yield gone (5ec5aeb, the C code of call 60's build plus its knobs): fewer polling
# threads, two pairs: 2 I/O threads, 2 I/O threads polling 50 us, against the defaults (3, 200 us).
P=/tmp/p64; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:io2:ls50 gpu:io2 gpu gpu:io2:ls50 gpu:io2 2>&1 | tee $OUT/rrt_call64.txt | grep -E '^==|WAITS|of them'
echo "done at ${SECONDS}s"
