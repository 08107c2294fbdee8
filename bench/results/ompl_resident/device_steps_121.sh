set -uo pipefail
# Written in the twenty-sixth session. Run after call 119's pack, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_121.sh".
# Call 121: the host is CPU-bound (~98 % busy, call 118) and with the motions' probes in the ring (x4)
# the two host lanes still hold ~1.6 cores: no host lanes (hl0) with x4, with x4 and four loops, and
# with x1 (the probes then to the lanes), against the defaults; two rounds.
source bench/device_unpack.sh /tmp/p121
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x4:xb64:hl0 gpu:x4:xb64:hl0:io4 gpu:hl0 2>&1 | tee -a $OUT/rrt_call121.txt | grep -E '^==' | cut -c1-160
done
python3 bench/variants_table.py $OUT/rrt_call121.txt | tee $OUT/table_call121.md
grep -A1 "^== " $OUT/rrt_call121.txt | grep "tandemd THREADS" | cut -c1-220
echo "done at ${SECONDS}s"
