set -uo pipefail
# Call 42: is the clients' own process a bound? bench_robot_server, single states (.rtt/ as call 32's),
# one in flight per client: 64 clients in one process against 2 processes of 32 (the same tandemd, its
# defaults, then 2 I/O threads); the sums of their rates.
P=/tmp/p42; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
R="$P/new/bin/bench_robot_server --urdf .panda/panda.urdf --srdf .panda/panda.srdf --world $W/problems/bookshelf_small_panda/scene0001.yaml --batch 1 --inflight 1 --seconds 3 --configs .rtt/configs.txt"
{
for io in 0 2; do
  S=$P/t.sock; rm -rf $S $P/data
  $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --io-threads $io --log-level warn 2>$P/td.err & pid=$!
  for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
  echo "## io-threads $io: one process of 64 clients"
  $R --server unix:$S --clients 64
  echo "## io-threads $io: two processes of 32 clients"
  $R --server unix:$S --clients 32 & a=$!; $R --server unix:$S --clients 32 & b=$!; sleep 1.5; bash bench/thread_cpu.sh $pid 1; wait $a $b
  echo "## io-threads $io: four processes of 16 clients"
  ps=(); for k in 1 2 3 4; do $R --server unix:$S --clients 16 & ps+=($!); done; wait "${ps[@]}"
  kill $pid; wait $pid
done
} 2>&1 | grep -v "^bench_robot_server: " | tee $OUT/rtt_call42.txt
echo "done at ${SECONDS}s"
