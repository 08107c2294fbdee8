set -uo pipefail
# Call 87: 64 planners with the express ring (call 85's build): requests of at most 16 configurations through it, with and
# without host lanes, with no reply threads (rt0: the express thread writes them), against tandemd's defaults; two rounds.
P=/tmp/p87; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x16:xb64:hl0 gpu:x16:xb64 gpu:x16:xb64:hl0:rt0 2>&1 | tee -a $OUT/rrt_call87.txt | grep -E '^==|replies written|host thread'
done
echo "done at ${SECONDS}s"
