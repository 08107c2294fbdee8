set -uo pipefail
P=/tmp/p11; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
head -3 $P/new/PACK_INFO
for t in robot_scene gpu scheduler robotd; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t --verbose >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
echo "## TDM_TEST_IO_THREADS=2 test_daemon" >> $OUT/tests.txt; TDM_TEST_IO_THREADS=2 timeout 200 $P/new/bin/test_daemon --verbose >> $OUT/tests.txt 2>&1; echo "## TDM_TEST_IO_THREADS=2 test_daemon exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit" $OUT/tests.txt
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
TDM_GPU_CONFIG_GRAPHS=0 $L --verify --repeat 20 --threads 2 --lanes 2 --shapes 1:1,8:32 $worlds > $OUT/verify_out.txt 2>&1; grep -E "verify|rror" $OUT/verify_out.txt
