set -uo pipefail
# Call 80: bench/run_ompl.sh's whole table at tandemd's defaults on the session's last build, with the report's
# new ratios section.
P=/tmp/p80; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
env OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1 bash bench/run_ompl.sh $OUT/ompl_call80.md > $OUT/run_ompl.log 2>&1; tail -14 $OUT/ompl_call80.md
echo "done at ${SECONDS}s"
