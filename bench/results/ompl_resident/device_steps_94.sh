set -uo pipefail
# Run after bench/device_prepare.sh (the build at HEAD packed into .packs, the Panda into .panda), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_94.sh".
# Call 94 (prepared in the twenty-second session): a one-motion any-state batch stopping at its first
# colliding state on the CPU engine (the host lanes' probes: two threads ~80 % busy with them in call 87)
# against every state run (as0), three rounds alternated, with the GPU engine; and the CPU engine's rows.
P=/tmp/p94; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:as0 cpu cpu:as0 2>&1 | tee -a $OUT/rrt_call94.txt | grep -E '^=='
done
python3 bench/variants_table.py $OUT/rrt_call94.txt | tee $OUT/table_call94.md
echo "done at ${SECONDS}s"
