set -uo pipefail
nvidia-smi -L
P=/tmp/p3; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu scheduler; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t --verbose >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## test" $OUT/tests.txt
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
$L --verify --repeat 50 --threads 2 --lanes 2 --shapes 1:1,8:32,16:64 $worlds 2>&1 | grep -E "verify|rror" | tee $OUT/verify.md
{ echo "## graphs"; $L --threads 1 --repeat 300 --shapes 1:1,4:2,8:8,8:32 $worlds;
  echo "## no graphs"; TDM_GPU_CONFIG_GRAPHS=0 $L --threads 1 --repeat 300 --shapes 1:1,4:2,8:8,8:32 $worlds; } 2>&1 | tee $OUT/latency.md | grep -E '^\| [0-9]|##'
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu:lanes5:nograph 2>&1 | tee $OUT/rrt_list.txt | grep -E '^==|replies'
