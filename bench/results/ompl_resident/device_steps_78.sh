set -uo pipefail
# Call 78: the session's final build (fold_task and answer_of shared by the two folds): the GPU suites of the
# changed code (gpu, robot_scene, robotd, daemon), and
# bench_config_latency --verify on 5 scenes of each scenario at planner sizes (fused) and pooled sizes.
P=/tmp/p78; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in gpu robot_scene robotd daemon; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do ls $s/scene00*.yaml | sed -n '10p;20p;30p;40p;50p'; done)
timeout 200 $L --verify --repeat 100 --threads 2 --lanes 2 --shapes 1:1,1:8,8:8,35:1,16:32 $worlds > $OUT/verify.txt 2>&1; grep -E "verify|rror" $OUT/verify.txt
echo "done at ${SECONDS}s"
