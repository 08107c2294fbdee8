set -uo pipefail
# Call 86: 64 planners with the express ring (call 85's build): more resident blocks (xb128), only a planner's
# smallest requests through it (x8, x16), without host lanes (hl0), against tandemd's defaults; two rounds.
P=/tmp/p86; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x64:xb128 gpu:x64:xb128:hl0 gpu:x16:xb64:hl0 gpu:x8:xb64:hl0 2>&1 | tee -a $OUT/rrt_call86.txt | grep -E '^==|replies written|host thread'
done
echo "done at ${SECONDS}s"
