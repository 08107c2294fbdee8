set -uo pipefail
P=/tmp/p10; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
timeout 200 $P/new/bin/test_robot_scene --verbose --filter 'robot_scene/resident*' > $OUT/tests.txt 2>&1; echo "## exit $?" >> $OUT/tests.txt
for t in robot_scene gpu; do timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|exit|cache|four" $OUT/tests.txt
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
$L --verify --repeat 20 --threads 2 --lanes 2 --shapes 1:1,8:32 $worlds > $OUT/verify_out.txt 2>&1; grep -E "verify|rror" $OUT/verify_out.txt
$L --threads 5 --lanes 5 --repeat 300 --shapes 1:1,5:1,5:40 $worlds 2>&1 | grep -E '^\| [0-9]' | tee $OUT/latency.md
