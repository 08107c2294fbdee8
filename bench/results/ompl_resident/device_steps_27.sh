set -uo pipefail
# Call 27: block runs up to 262 144 entries by default (the commit before this file's). The suites;
# a run alone past that size, block runs against the levels, to place the threshold; bench/run_ompl.sh's
# whole table (the roadmap's large batches included) at tandemd's defaults.
P=/tmp/p27; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
for bce in 65536 16777216; do
  echo "## TDM_GPU_BLOCK_CONFIG_ENTRIES=$bce, 1 thread 1 lane"; TDM_GPU_BLOCK_CONFIG_ENTRIES=$bce $L --threads 1 --lanes 1 --repeat 40 --shapes 10:100,16:128,16:256,32:256 $worlds
done > $OUT/latency_call27.md 2>&1
grep -E '^##|^\| [0-9]' $OUT/latency_call27.md | cut -c1-80
echo "latency done at ${SECONDS}s"
common="OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
left=$((585 - SECONDS)); echo "run_ompl with ${left}s"
env $common timeout $left bash bench/run_ompl.sh $OUT/ompl_call27.md > /dev/null 2>$OUT/ompl_call27.err; echo "run_ompl exit $?"; grep -E '^\| (FCL|Tandem)' $OUT/ompl_call27.md
echo "done at ${SECONDS}s"
