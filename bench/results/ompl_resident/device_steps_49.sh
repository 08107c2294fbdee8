set -uo pipefail
# Call 49: event loops that poll for S us after a read instead of sleeping in epoll (--loop-spin-us S,
# new), with main's exclusive server lock and with the shared one (.packs/tandemd_sl: branch sl2's
# daemon changes plus the same polling); each run's legs as in call 48 (request_legs.py), its loops'
# CPU and the machine's; FCL 16 for the ratio.
P=/tmp/p49; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
cpustat() {
    read -r _ a1 a2 a3 a4 a5 a6 a7 a8 _ < /proc/stat; sleep "$1"; read -r _ b1 b2 b3 b4 b5 b6 b7 b8 _ < /proc/stat
    awk -v f=$(( $(getconf CLK_TCK) * 3 / 2 )) -v u=$((b1-a1+b2-a2)) -v sy=$((b3-a3)) -v id=$((b4-a4+b5-a5)) \
        'BEGIN { printf "CPUSTAT user=%.2f sys=%.2f idle=%.2f (cores)\n", u/f, sy/f, id/f }'
}
S=$P/t.sock
run() { # NAME TANDEMD ARGS...
    local name=$1 td=$2; shift 2
    rm -rf $S $P/data $P/server.txt $P/client.txt
    TDM_REQUEST_TRACE=$P/server.txt $td --listen unix:$S --data-dir $P/data --log-level warn "$@" 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    TDM_OMPL_TRACE=$P/client.txt $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null & plan=$!
    ( sleep 2; cpustat 1.5 > $P/cpu.txt ) & s1=$!
    ( sleep 2; bash bench/thread_cpu.sh $pid 1.5 > $P/th.txt ) & s2=$!
    wait $plan; wait $s1 $s2
    kill $pid; wait $pid
    { echo "== $name ($*): $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"; cat $P/cpu.txt; echo "tandemd $(cat $P/th.txt)"
      python3 bench/request_legs.py $P/client.txt $P/server.txt | tail -1; } | tee -a $OUT/legs_call49.txt
}
run main $P/new/bin/tandemd
run main-spin200 $P/new/bin/tandemd --loop-spin-us 200
run shared-io2-spin200 .packs/tandemd_sl --io-threads 2 --loop-spin-us 200
run shared-io3-spin200 .packs/tandemd_sl --io-threads 3 --loop-spin-us 200
run main-io2-spin200 $P/new/bin/tandemd --io-threads 2 --loop-spin-us 200
run shared-io2-spin200-hl4 .packs/tandemd_sl --io-threads 2 --loop-spin-us 200 --host-lanes 4
run main $P/new/bin/tandemd
run shared-io2-spin200 .packs/tandemd_sl --io-threads 2 --loop-spin-us 200
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/legs_call49.txt
echo "done at ${SECONDS}s"
