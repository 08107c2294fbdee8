set -uo pipefail
# Run after bench/device_prepare.sh, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_96.sh".
# Call 96: the express ring's programs in an arena allocated once (call 95's memcheck: blocks read
# programs from a stream-ordered pool's allocations made after their launch began, which CUDA
# does not promise); robot_scene (a new test: programs evicted for room in a 12 KiB arena) and
# robotd as usual; then memcheck over robot_scene and, with a longer limit and each test named as
# it ends, over gpu.
P=/tmp/p96; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $? at ${SECONDS}s" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|express, programs" $OUT/tests.txt
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in robot_scene:150 gpu:330; do
  s=${t%%:*}; lim=${t##*:}
  echo "## test_$s under memcheck (limit ${lim}s)" | tee -a $OUT/memcheck.txt
  timeout $lim $CS --tool memcheck --target-processes all --leak-check full --error-exitcode 9 --print-limit 50 \
    $P/new/bin/test_$s -j1 --verbose >> $OUT/memcheck.txt 2>&1
  echo "## test_$s exit $? at ${SECONDS}s" | tee -a $OUT/memcheck.txt
done
grep -E "Synthesis|^## |ERROR SUMMARY|LEAK SUMMARY|Invalid|FAIL|Timed out" $OUT/memcheck.txt | sort | uniq -c | sort -rn | head -40
grep -cE "^\[PASS\]" $OUT/memcheck.txt
echo "done at ${SECONDS}s"
