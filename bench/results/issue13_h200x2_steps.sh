set -uo pipefail
# Thirty-sixth session, on a host with two GPUs (nvidia-h200-x2), where tandemd and the engine use
# both by default: the GPU build's suites not yet run there (the thirty-fifth session ran gpu,
# cost_model, scheduler, robot_scene, motions, robotd, daemon), scheduler again for its new test
# (removed trees freed with no run after, 2c6b5a1), then 64 RRTConnect planners through tandemd on
# both GPUs against the first alone (`gpu1`, --gpu-devices 0), alternated.
# Pack: MINIMAL=1 OMPL=1 ARCHIVE=1 TESTS="scheduler engine pooler limits ops tenants tls client ring ompl"
# bench/device_pack.sh build .packs/new, carrying [".packs", ".panda"]:
# device run --kind nvidia-h200-x2 "SUITES='...' ROUNDS=N bash bench/results/issue13_h200x2_steps.sh"
# (SUITES: the suites to run, in order, none started past STOP_S seconds; ROUNDS: planner rounds, 0: none).
source bench/device_unpack.sh /tmp/px
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for t in ${SUITES:-scheduler engine pooler limits ops tenants tls client ring ompl}; do
  if (( SECONDS > ${STOP_S:-420} )); then echo "## test_$t not started (${SECONDS}s)" >> $OUT/tests_h200x2.txt; continue; fi
  echo "## test_$t" >> $OUT/tests_h200x2.txt
  t0=$SECONDS
  timeout 240 $P/new/bin/test_$t >> $OUT/tests_h200x2.txt 2>&1; echo "## test_$t exit $? in $((SECONDS - t0))s" >> $OUT/tests_h200x2.txt
done
grep -E "Synthesis|^## .*(exit|not started)|FAIL|Assert|expression|gave .* mesh bytes" $OUT/tests_h200x2.txt
for r in $(seq ${ROUNDS:-0}); do
  V=$([ $((r % 2)) = 1 ] && echo "gpu gpu:gpu1" || echo "gpu:gpu1 gpu")
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $V >> $OUT/rrt_h200x2.txt 2>&1
  echo "round $r done at ${SECONDS}s"
done
[[ -s $OUT/rrt_h200x2.txt ]] && { python3 bench/variants_table.py $OUT/rrt_h200x2.txt > $OUT/table_h200x2.md; cat $OUT/table_h200x2.md; }
echo "done at ${SECONDS}s"
