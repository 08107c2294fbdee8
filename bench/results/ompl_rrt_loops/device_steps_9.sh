set -uo pipefail
nvidia-smi -L
P=/tmp/p9; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
for t in 1 2 3 5 8; do echo "## $t threads on $t lanes"; $L --threads $t --lanes $t --repeat 300 --shapes 1:1,5:1,5:40 $worlds 2>&1 | grep -E '^\| [0-9]'; done | tee $OUT/concurrency.md
