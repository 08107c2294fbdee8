set -uo pipefail
# Call 21 (cb10a8f, call 20's pack): host lanes on and off at 3 (the default) and 5 engine lanes, each
# pair twice, interleaved, on one host.
P=/tmp/p21; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:hl0 gpu gpu:lanes5:hl0 gpu:lanes5 gpu:hl0 gpu gpu:lanes5:hl0 gpu:lanes5 2>&1 | tee $OUT/rrt_ab.txt | grep -E '^=='
echo "done at ${SECONDS}s"
