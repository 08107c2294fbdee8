set -uo pipefail
# Thirty-fifth session: alpha-1.5, whose two-GPU row stays at 0.5-1.2x one GPU's with dispatch under load
# while Apartment's reaches 1.8-1.9x. Fewer engine lanes per GPU (bigger batches: with six lanes the
# batches are a fifth of one GPU's three lanes'), then perf over every CPU during the both-GPU row at
# the defaults. Pack with symbols: STRIP=0 MINIMAL=1 ARCHIVE=1 TESTS="" bench/device_pack.sh build
# .packs/new, Debian's perf in .perf/perf.tar.gz, carrying [".packs", ".scenes", ".perf"]:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_lanes_steps.sh".
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for lanes in 3 2 1; do
  DEVICE_LISTS="0 all" SCENES="alpha-1.5" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 BATCH=1024 INFLIGHT=4 \
    DURATION=5 PACK=/tmp/px/new TANDEMD_ARGS="--engine-lanes $lanes" REPORTS=/tmp/px/rep_l$lanes PROFILE_THREADS=1 \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_alpha_lanes$lanes.md 2>&1 | grep -E '^\| alpha' | sed "s/^/lanes $lanes /"
done
for d in /tmp/px/rep_l*; do for f in $d/*.md; do
  echo "== ${d#/tmp/px/rep_} $(basename $f .md)"
  grep -E '^\| 64 \| 1024 \| tdm|^(cpu|gpu)_queries|^gpu_seconds|^gpu_iterations|^batches|^requests|^engine_seconds' $f
done; done > $OUT/stats_h200x2_lanes.txt
mkdir -p /tmp/px/perf; tar xzf .perf/perf.tar.gz -C /tmp/px/perf
PERF="env LD_LIBRARY_PATH=/tmp/px/perf/lib /tmp/px/perf/perf"
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null; echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
DEVICE_LISTS="all" SCENES="alpha-1.5" OMPL=.scenes MODE=bool N_POSES=100000 CLIENTS=64 BATCH=1024 INFLIGHT=4 \
  DURATION=12 PACK=/tmp/px/new bash bench/run_gpus.sh $OUT/gpus_h200x2_alpha_perf.md > /dev/null 2>&1 & run=$!
sleep 8; $PERF record -e cpu-clock -F 2000 -a -o /tmp/px/perf.data -- sleep 2 2> /dev/null; wait $run
R="$PERF report -i /tmp/px/perf.data --stdio --no-children -g none"
{ $R --sort comm --percent-limit 0.3; $R --sort comm,dso,sym --percent-limit 0.2; } 2>/dev/null | grep -v "^$" | head -300 > $OUT/perf_h200x2_alpha_loaded.txt
grep -E '^\| alpha' $OUT/gpus_h200x2_alpha_perf.md
echo "done at ${SECONDS}s"
