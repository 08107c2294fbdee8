set -uo pipefail
# Written in the twenty-ninth session. Run with call 152's pack (the tree arena's tree; ARCHIVE=1
# TESTS="robotd pooler" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_154.sh".
# Call 154: no latency lane (llt0: every engine lane takes any batch; by default lane 0 takes only
# requests of at most 256 tasks), and with it two lanes instead of three (one core fewer spinning on
# the device), against the defaults, four alternated rounds (never tried with 64 planners).
source bench/device_unpack.sh /tmp/p154
for r in 1 2 3 4; do
  if (( r % 2 )); then vs="gpu gpu:llt0 gpu:llt0:lanes2"; else vs="gpu:llt0:lanes2 gpu:llt0 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call154.txt | grep -E '^==|thread [0-9]:' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call154.txt | tee $OUT/table_call154.md
echo "done at ${SECONDS}s"
