set -uo pipefail
# Call 39: where a single state's round trip goes with many clients. bench_robot_server (single random
# Panda configurations, one in flight per client; .rtt/ as device_steps_32.sh made them) against tandemd
# (defaults, TDM_DISPATCH_TRACE=1: its time per reply by kind, printed at its stop) with 1, 16 and 64
# clients, and 64 with the pooler's threads not polling (TDM_POOLER_SPIN_US=0); then the rigid server
# bench (bench/run_server.sh, the generated demo scene, Unix socket, 64 clients, batches of 1 and 64
# poses) with 0, 2 and 3 I/O threads, now that queries are handled holding the server's lock shared.
P=/tmp/p39; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
R="$P/new/bin/bench_robot_server --urdf .panda/panda.urdf --srdf .panda/panda.srdf --world $W/problems/bookshelf_small_panda/scene0001.yaml --batch 1 --inflight 1 --seconds 3 --configs .rtt/configs.txt"
{
for run in 1 16 64 64:spin0; do
  c=${run%%:*}; envs=(TDM_DISPATCH_TRACE=1); [[ $run == *spin0 ]] && envs+=(TDM_POOLER_SPIN_US=0)
  S=$P/t.sock; rm -rf $S $P/data
  env "${envs[@]}" $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn 2>$P/td.err & pid=$!
  for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
  echo "## $run clients"
  $R --server unix:$S --clients $c & b=$!; sleep 1.5; [[ $c == 64 ]] && bash bench/thread_cpu.sh $pid 1; wait $b
  kill $pid; wait $pid
  grep -v '^dispatch' $P/td.err | tail -5
done
} 2>&1 | tee $OUT/rtt_call39.txt
echo "rtt done at ${SECONDS}s"
mkdir -p build/tools build/daemon build/bench; ln -sf $P/new/bin/tandem build/tools/tandem; ln -sf $P/new/bin/tandemd build/daemon/tandemd; ln -sf $P/new/bin/bench_server build/bench/bench_server
for io in 0 2 3; do
  echo "## rigid, io-threads $io"
  SOCKET=unix CLIENTS=64 BATCHES="1 64" DURATION=3 PROFILE_THREADS=1 TANDEMD_ARGS="--io-threads $io" bash bench/run_server.sh $OUT/server_io$io.md > /dev/null 2>&1
  grep -E "^\|" $OUT/server_io$io.md | tail -3
done 2>&1 | tee $OUT/server_call39.txt
echo "done at ${SECONDS}s"
