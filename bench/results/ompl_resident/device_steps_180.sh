set -uo pipefail
# Written in the thirty-second session. Run after a pack of fdbf355 (ARCHIVE=1 MINIMAL=1 TESTS="bvh geom
# primitive" UPLOAD_WAIT=1 bench/device_pack.sh build .packs/new; then rm -rf .packs/new) and, in
# .packs/old_tandemd.tar.gz, bin/tandemd of 6a6dd74's pack (call 178's), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_180.sh".
# Call 180: fdbf355 (the tree build's rounding up and extremes inlined) with the GPU build: bvh, geom,
# primitive; then a 4M-triangle MeshPut's time (bench_upload_wait) with fdbf355's tandemd and
# 6a6dd74's, each with the tree built by one thread and by the default (auto: a quarter of the
# cores), two alternated rounds.
source bench/device_unpack.sh /tmp/p180
mkdir -p /tmp/p180/old && tar xzf .packs/old_tandemd.tar.gz -C /tmp/p180/old
nproc
for t in bvh geom primitive; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
run() { # tandemd, label, tandemd's flags
  local d; d=$(mktemp -d)
  $1 --listen unix:$d/s --data-dir $d/data --log-level warn $3 2> $d/log &
  local p=$!
  for i in $(seq 200); do [ -S $d/s ] && break; sleep 0.1; done
  echo "## $2 ($3)"
  $P/new/bin/bench_upload_wait unix:$d/s 4000000 $p | grep -E "^big|round trips|^small"
  kill $p; wait $p 2> /dev/null; rm -rf $d
}
for r in 1 2; do
  for f in "--build-threads auto" "--build-threads 1"; do
    run $P/new/bin/tandemd "new fdbf355" "$f"
    run /tmp/p180/old/bin/tandemd "old 6a6dd74" "$f"
  done
  echo "round $r done at ${SECONDS}s"
done 2>&1 | tee $OUT/upload_wait_call180.txt
