set -uo pipefail
P=/tmp/p2; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
head -3 $P/new/PACK_INFO
echo "## test_robot_scene resident (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_robot_scene --verbose --filter 'robot_scene/resident*' >> $OUT/tests.txt 2>&1; echo "## exit $?" >> $OUT/tests.txt
for t in robot_scene gpu scheduler pooler robotd; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|resident|uploads" $OUT/tests.txt
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
$L --verify --repeat 20 --threads 2 --lanes 2 --shapes 1:1,8:32 $worlds > $OUT/verify_out.txt 2>&1; grep -E "verify|rror" $OUT/verify_out.txt
for pc in 16384 0; do for t in 1 5; do echo "## TDM_GPU_PROGRAM_CACHE_KB=$pc, $t threads on $t lanes"; TDM_GPU_PROGRAM_CACHE_KB=$pc $L --threads $t --lanes $t --repeat 300 --shapes 1:1,1:5,5:1,1:40,5:40 $worlds 2>&1 | grep -E '^\| [0-9]'; done; done | tee $OUT/latency_resident.md
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu:lanes5:nopc gpu 2>&1 | tee $OUT/rrt_resident.txt | grep -E '^==|replies'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>$OUT/fcl16.err; tail -1 $OUT/fcl16.txt
