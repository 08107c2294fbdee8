set -uo pipefail
P=/tmp/p6; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
# the roadmap build alone, resident programs on and off (TDM_GPU_PROGRAM_CACHE_KB=0)
for pc in 16384 0; do
  rm -rf /tmp/tp && mkdir -p /tmp/tp
  TDM_GPU_PROGRAM_CACHE_KB=$pc $P/new/bin/tandemd --listen unix:/tmp/tp/s.sock --data-dir /tmp/tp/data --engine gpu --log-level warn 2>/tmp/tp/err & pid=$!
  for i in $(seq 300); do [[ -S /tmp/tp/s.sock ]] && break; sleep 0.1; done
  echo "## PRM, TDM_GPU_PROGRAM_CACHE_KB=$pc"; $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner prm --prm-samples 10000 --prm-k 10 --time-limit 0.001 --planners 1 --checker tandem --server unix:/tmp/tp/s.sock --per-scenario 1 $W/problems 2>/dev/null | tail -1
  kill $pid; wait $pid 2>/dev/null
done | tee $OUT/prm_resident.txt
common="OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1"
env $common bash bench/run_ompl.sh $OUT/ompl_default.md > /dev/null 2>$OUT/ompl_default.err; grep -E '^\| (FCL|Tandem)' $OUT/ompl_default.md
env $common TANDEMD_ARGS="--engine-lanes 5" bash bench/run_ompl.sh $OUT/ompl_lanes5.md > /dev/null 2>$OUT/ompl_lanes5.err; grep -E '^\| (FCL|Tandem)' $OUT/ompl_lanes5.md
