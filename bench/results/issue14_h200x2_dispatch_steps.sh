set -uo pipefail
# Thirty-fifth session, after issue14_h200x2_engine_steps.sh: dispatch under load (6f71535) against the
# plain cost model (TDM_DISPATCH_LOADED=0), --engine auto, 32 pool threads, alternated twice. Pack:
# MINIMAL=1 ARCHIVE=1 TESTS="scheduler engine pooler cost_model" bench/device_pack.sh build .packs/new,
# carrying [".packs", ".scenes"], on a two-GPU machine:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_dispatch_steps.sh".
mkdir -p /tmp/px/new; tar xzf .packs/new.tar.gz -C /tmp/px/new; head -3 /tmp/px/new/PACK_INFO
export LD_LIBRARY_PATH=/tmp/px/new/lib PROFILE_THREADS=1
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for t in cost_model scheduler engine pooler; do echo "== test_$t"; /tmp/px/new/bin/test_$t 2>&1 | tail -2; done \
  | tee $OUT/tests_h200x2_dispatch.txt
for r in 1 2; do for v in loaded plain; do
  if [[ $v == plain ]]; then export TDM_DISPATCH_LOADED=0; else unset TDM_DISPATCH_LOADED; fi
  DEVICE_LISTS="0 all" SCENES="alpha-1.5 Apartment" OMPL=.scenes MODE=bool N_POSES=100000 \
    CLIENTS=64 BATCH=1024 INFLIGHT=4 DURATION=5 PACK=/tmp/px/new REPORTS=/tmp/px/reports_${v}_$r \
    bash bench/run_gpus.sh $OUT/gpus_h200x2_${v}_$r.md 2>&1 | grep -E '^\| (alpha|Apart)' | sed "s/^/$v $r /"
done; done
unset TDM_DISPATCH_LOADED
for d in /tmp/px/reports_*; do for f in $d/*.md; do
  echo "== ${d#/tmp/px/reports_} $(basename $f .md)"
  grep -E '^\| 64 \| 1024 \| tdm|^(cpu|gpu)_queries|^engine_detail|^batches|^requests' $f
done; done > $OUT/stats_h200x2_dispatch.txt
echo "done at ${SECONDS}s"
