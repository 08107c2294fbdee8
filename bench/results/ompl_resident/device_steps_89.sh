set -uo pipefail
# Call 89: the session's last build (253298c: one rule for a device answer's result): gpu, robot_scene, scheduler,
# robotd; bench_config_latency --verify through the lanes and through the express ring on 35 worlds.
P=/tmp/p89; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in gpu robot_scene scheduler robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do ls $s/scene00*.yaml | sed -n '10p;20p;30p;40p;50p'; done)
timeout 120 $L --verify --repeat 100 --threads 2 --lanes 2 --shapes 1:1,1:8,8:8,16:32 $worlds > $OUT/verify.txt 2>&1
timeout 120 $L --verify --express 64 --repeat 100 --threads 4 --lanes 2 --shapes 1:1,1:8,1:64 $worlds >> $OUT/verify.txt 2>&1
grep -E "verify|express|rror" $OUT/verify.txt
echo "done at ${SECONDS}s"
