set -uo pipefail
# Call 75: the host's CPU wake-up latency limit held at 0 (tandemd --cpu-latency-us 0, new; for FCL's rows
# the shell holds /dev/cpu_dma_latency) against the host's setting, three rounds alternated; test_daemon;
# then bench/run_ompl.sh's whole table with CPU_LATENCY_US=0 and without.
P=/tmp/p75; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
timeout 300 $P/new/bin/test_daemon > $OUT/tests.txt 2>&1; echo "## test_daemon exit $?" >> $OUT/tests.txt; grep -E "Synthesis|exit|FAIL" $OUT/tests.txt
FCL="$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems"
hold() { exec 9> /dev/cpu_dma_latency && printf '\x00\x00\x00\x00' >&9; }
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lat0 2>&1 | tee -a $OUT/rrt_call75.txt | grep -E '^==|ompl_plan WAITS'
  echo "fcl16 host: $($FCL 2>&1 | tail -1)" | tee -a $OUT/fcl16.txt
  hold; echo "fcl16 held: $($FCL 2>&1 | tail -1)" | tee -a $OUT/fcl16.txt; exec 9>&-
done
echo "A/B at ${SECONDS}s"
R="env OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
$R CPU_LATENCY_US=0 bash bench/run_ompl.sh $OUT/ompl_call75_lat0.md > $OUT/run_ompl_lat0.log 2>&1; grep -E "^\| (FCL|Tandem)" $OUT/ompl_call75_lat0.md | head -8
$R bash bench/run_ompl.sh $OUT/ompl_call75.md > $OUT/run_ompl.log 2>&1; grep -E "^\| (FCL|Tandem)" $OUT/ompl_call75.md | head -8
echo "done at ${SECONDS}s"
