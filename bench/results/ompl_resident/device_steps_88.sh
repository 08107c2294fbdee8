set -uo pipefail
# Call 88: the session's last build (e7c12cc): every suite with GPU tests; bench_config_latency --verify through the
# express ring on 5 scenes of each scenario; bench/run_ompl.sh's whole table at tandemd's defaults and with the
# express ring (--express-configs 16 --express-blocks 64), per-problem logs kept.
P=/tmp/p88; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in gpu robot_scene scheduler robotd daemon limits pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests at ${SECONDS}s"
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do ls $s/scene00*.yaml | sed -n '10p;20p;30p;40p;50p'; done)
timeout 120 $L --verify --express 64 --repeat 200 --threads 4 --lanes 2 --shapes 1:1,1:8,1:64,8:8 $worlds > $OUT/verify.txt 2>&1; grep -E "verify|express|rror" $OUT/verify.txt
echo "verify at ${SECONDS}s"
R="env OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
$R LOG_DIR=$OUT/logs_x TANDEMD_ARGS="--express-configs 16 --express-blocks 64" bash bench/run_ompl.sh $OUT/ompl_call88_x.md > $OUT/run_ompl_x.log 2>&1; grep -E "^\| (FCL|Tandem)" $OUT/ompl_call88_x.md | head -9
$R bash bench/run_ompl.sh $OUT/ompl_call88.md > $OUT/run_ompl.log 2>&1; grep -E "^\| (FCL|Tandem)" $OUT/ompl_call88.md | head -9
echo "done at ${SECONDS}s"
