set -uo pipefail
# Call 45 (first on an H200 host): the machine's CPUs (lscpu; /proc/stat over 1.5 s of each run: busy,
# idle and steal in cores), and a planner's request split at tandemd's read of its connection:
# 64 RRTConnect planners through tandemd (GPU engine, defaults; then --io-threads 2) with
# TDM_REQUEST_TRACE and TDM_OMPL_TRACE joined by bench/request_legs.py; FCL 16 for the ratio.
P=/tmp/p45; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L3)" | tee $OUT/lscpu_call45.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $OUT/lscpu_call45.txt
cpustat() { # busy / idle / steal cores over $1 s
    read -r _ a1 a2 a3 a4 a5 a6 a7 a8 _ < /proc/stat; sleep "$1"; read -r _ b1 b2 b3 b4 b5 b6 b7 b8 _ < /proc/stat
    hz=$(getconf CLK_TCK)
    awk -v s="$1" -v hz=$hz -v u=$((b1-a1+b2-a2)) -v sy=$((b3-a3)) -v id=$((b4-a4+b5-a5)) -v irq=$((b6-a6+b7-a7)) -v st=$((b8-a8)) \
        'BEGIN { f = hz * s; printf "CPUSTAT user=%.2f sys=%.2f irq=%.2f idle=%.2f steal=%.2f (cores)\n", u/f, sy/f, irq/f, id/f, st/f }'
}
S=$P/t.sock
for io in 0 2; do
    rm -rf $S $P/data $P/server.txt $P/client.txt
    TDM_REQUEST_TRACE=$P/server.txt $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --io-threads $io --log-level warn 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    TDM_OMPL_TRACE=$P/client.txt $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null & plan=$!
    ( sleep 2; cpustat 1.5 > $P/cpu.txt ) & s1=$!
    ( sleep 2; bash bench/thread_cpu.sh $pid 1.5 > $P/th.txt ) & s2=$!
    ( sleep 2; bash bench/thread_cpu.sh $plan 1.5 > $P/thp.txt ) & s3=$!
    wait $plan; wait $s1 $s2 $s3
    { echo "== io-threads $io: $(tail -1 $P/plan.txt)"; cat $P/cpu.txt; echo "tandemd $(cat $P/th.txt)"; echo "ompl_plan $(cut -c1-200 $P/thp.txt)"; } | tee -a $OUT/rrt_call45.txt
    kill $pid; wait $pid
    python3 bench/request_legs.py $P/client.txt $P/server.txt | tee $OUT/legs_io${io}_call45.md
done
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $P/fcl.txt 2>/dev/null & plan=$!
( sleep 4; cpustat 1.5 > $P/cpu.txt ) & s1=$!
wait $plan; wait $s1
{ echo "== fcl 16: $(tail -1 $P/fcl.txt)"; cat $P/cpu.txt; } | tee -a $OUT/rrt_call45.txt
echo "done at ${SECONDS}s"
