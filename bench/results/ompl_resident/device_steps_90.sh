set -uo pipefail
# Call 90: the last build (15c5e2e): 64 planners at tandemd's defaults against the express ring at x16:xb64 (the
# best of calls 86-87), three rounds alternated, for the ring's default.
P=/tmp/p90; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x16:xb64 2>&1 | tee -a $OUT/rrt_call90.txt | grep -E '^=='
done
echo "done at ${SECONDS}s"
