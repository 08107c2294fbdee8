set -uo pipefail
nvidia-smi -L
P=/tmp/p16; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
$P/new/bin/test_pooler 2>&1 | tail -1
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu:lanes8 2>&1 | tee $OUT/rrt_queued.txt
