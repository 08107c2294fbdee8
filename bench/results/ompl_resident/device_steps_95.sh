set -uo pipefail
# Run after bench/device_prepare.sh, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_95.sh".
# Call 95: compute-sanitizer (memcheck: out-of-bounds and misaligned device accesses, leaks of device
# memory at exit, failed CUDA calls) over the GPU suites gpu and robot_scene, every test in its own
# process as Criterion runs them (--target-processes all), one job at a time; a suite's log in $OUT.
P=/tmp/p95; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
$CS --version | tail -2
for t in gpu:240 robot_scene:300; do
  s=${t%%:*}; lim=${t##*:}
  echo "## test_$s under memcheck (limit ${lim}s)" | tee -a $OUT/memcheck.txt
  timeout $lim $CS --tool memcheck --target-processes all --leak-check full --error-exitcode 9 --print-limit 50 \
    $P/new/bin/test_$s -j1 >> $OUT/memcheck.txt 2>&1
  echo "## test_$s exit $? at ${SECONDS}s" | tee -a $OUT/memcheck.txt
done
grep -E "Synthesis|^## |ERROR SUMMARY: [1-9]|LEAK SUMMARY|Invalid|FAIL|Timed out" $OUT/memcheck.txt | sort | uniq -c | sort -rn | head -40
echo "done at ${SECONDS}s"
