set -uo pipefail
# Written in the thirty-second session. Run after a pack of 6a6dd74 (ARCHIVE=1 OMPL=1 UPLOAD_WAIT=1
# TESTS="robotd daemon" bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying
# [".packs"]: device run "bash bench/results/ompl_resident/device_steps_178.sh".
# Call 178: 6a6dd74 (a Query of 1 MiB of numbers or more keeps them in its decoded arena) with the GPU
# build: robotd, daemon; then on a 16-core host, two rounds each: a neighbour's MeshList round trips
# beside a 67 MB Query (bench_upload_wait's UPLOAD_QUERY_BYTES), the default against
# TDM_DECODE_APART=0 (decoded and copied on the loop); a 4M-triangle MeshPut's time with the tree
# built by one thread (--build-threads 1) against the default (auto: a quarter of the cores).
source bench/device_unpack.sh /tmp/p178
nproc
for t in robotd daemon; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
B=$P/new/bin
run() { # tandemd's env, label, bench_upload_wait's env, triangles, tandemd's flags
  local d; d=$(mktemp -d)
  env $1 $B/tandemd --listen unix:$d/s --data-dir $d/data --log-level warn --max-queries 1300000 $5 2> $d/log &
  local p=$!
  for i in $(seq 200); do [ -S $d/s ] && break; sleep 0.1; done
  echo "## $2 ($1 $5)"
  env $3 $B/bench_upload_wait unix:$d/s ${4:-1000} $p | grep -E "^big|round trips|^small"
  kill $p; wait $p 2> /dev/null; rm -rf $d
}
for r in 1 2; do
  for a in "TDM_X=1" "TDM_DECODE_APART=0"; do
    run "$a" query "UPLOAD_QUERY_BYTES=67000000" 1000 ""
  done
  for f in "--build-threads 1" "--build-threads auto"; do
    run "TDM_X=1" mesh "TDM_Y=1" 4000000 "$f"
  done
  echo "round $r done at ${SECONDS}s"
done 2>&1 | tee $OUT/upload_wait_call178.txt
