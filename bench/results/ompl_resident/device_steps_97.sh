set -uo pipefail
# Run after bench/device_prepare.sh, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_97.sh".
# Call 97: compute-sanitizer's other tools over robot_scene (its fused runs, block runs and the
# express ring: the kernels whose blocks share frontiers and tasks in shared memory, a
# __syncthreads a level): racecheck (shared-memory hazards), synccheck (barriers used wrongly),
# initcheck (device memory read before written).
P=/tmp/p97; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in racecheck:200 synccheck:120 initcheck:150; do
  tool=${t%%:*}; lim=${t##*:}
  echo "## test_robot_scene under $tool (limit ${lim}s)" | tee -a $OUT/sanitizers.txt
  timeout $lim $CS --tool $tool --target-processes all --error-exitcode 9 --print-limit 30 \
    $P/new/bin/test_robot_scene -j1 --verbose >> $OUT/sanitizers.txt 2>&1
  echo "## test_robot_scene $tool exit $? at ${SECONDS}s" | tee -a $OUT/sanitizers.txt
done
grep -E "Synthesis|^## |ERROR SUMMARY|RACECHECK SUMMARY|hazard|Uninitialized|Barrier|FAIL" $OUT/sanitizers.txt | sort | uniq -c | sort -rn | head -40
echo "done at ${SECONDS}s"
