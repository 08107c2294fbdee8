set -uo pipefail
# Written in the thirty-first session. Run after a pack of the session's last code (ARCHIVE=1 MINIMAL=1
# TESTS="" UPLOAD_WAIT=1 bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying
# [".packs"]: device run "bash bench/results/ompl_resident/device_steps_177.sh".
# Call 177: what a client beside a large request waits for on a 16-core host (bench_upload_wait: a
# neighbour's MeshList round trips while one client puts a 4M-triangle mesh, a 15 MB URDF, a 16 MB
# world, or sends a 60 MB MotionCheck), large requests' work on libuv's pool (the default) against
# TDM_DECODE_APART=0 (all of it on the loop, as before the thirtieth session), two rounds.
source bench/device_unpack.sh /tmp/p177
B=$P/new/bin
run() { # tandemd's env, label, bench_upload_wait's env, triangles
  local d; d=$(mktemp -d)
  env $1 $B/tandemd --listen unix:$d/s --data-dir $d/data --log-level warn --max-robot-text-bytes 16777216 2> $d/log &
  local p=$!
  for i in $(seq 200); do [ -S $d/s ] && break; sleep 0.1; done
  echo "## $2 ($1)"
  env $3 $B/bench_upload_wait unix:$d/s ${4:-1000} $p | grep -E "^big|round trips|^small"
  kill $p; wait $p 2> /dev/null; rm -rf $d
}
for r in 1 2; do
  for a in "TDM_X=1" "TDM_DECODE_APART=0"; do
    run "$a" mesh "TDM_Y=1" 4000000
    run "$a" urdf "UPLOAD_ROBOT_BYTES=15000000"
    run "$a" world "UPLOAD_WORLD_BYTES=16000000"
    run "$a" motion "UPLOAD_MOTION_BYTES=60000000"
  done
  echo "round $r done at ${SECONDS}s"
done 2>&1 | tee $OUT/upload_wait_call177.txt
