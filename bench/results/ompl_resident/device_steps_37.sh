set -uo pipefail
# Call 37: where a planner's single states wait. bench_robot_server (64 clients, one request in flight
# each, bookshelf_small scene 1; inputs .rtt/ as device_steps_32.sh made them) against tandemd with 0, 2
# and 3 I/O threads now that queries are handled holding the server's lock shared; then the 64-planner
# row with the replies' time in tandemd by kind (host-thread queries, lane queries, motions): the
# default, --host-configs 1 (only single states on the host threads, a motion's probes pooled on the
# device), 4 host lanes, 2 I/O threads; FCL's 16 planners.
P=/tmp/p37; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
R="$P/new/bin/bench_robot_server --urdf .panda/panda.urdf --srdf .panda/panda.srdf --world $W/problems/bookshelf_small_panda/scene0001.yaml --batch 1 --inflight 1 --seconds 3 --clients 64"
{
for io in 0 2 3; do
  S=$P/t$io.sock; rm -rf $S $P/data$io
  $P/new/bin/tandemd --listen unix:$S --data-dir $P/data$io --io-threads $io --log-level warn 2>$P/td.err & pid=$!
  for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
  echo "## io-threads $io"
  $R --server unix:$S --configs .rtt/configs.txt & b=$!; sleep 1.5; bash bench/thread_cpu.sh $pid 1; wait $b
  $R --server unix:$S --motions .rtt/motions.txt --resolution 0.02 & b=$!; sleep 1.5; bash bench/thread_cpu.sh $pid 1; wait $b
  kill $pid; wait $pid
done
} 2>&1 | tee $OUT/rtt_call37.txt
echo "rtt done at ${SECONDS}s"
mkdir -p $OUT/plans $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:hc1 gpu:hl4:hc1 gpu:io2:hl4 gpu:io2:hl4:hc1 gpu 2>&1 | tee $OUT/rrt_call37.txt | grep -E '^==|replies|of them|tandemd THREADS'
cp $P/plans/plan_gpu_64.txt $OUT/plans/
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16.txt 2>/dev/null; tail -1 $OUT/plans/fcl16.txt
echo "done at ${SECONDS}s"
