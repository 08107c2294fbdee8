set -uo pipefail
# Call 68: the final build's legs (TDM_OMPL_TRACE joined with TDM_REQUEST_TRACE by bench/request_legs.py),
# with the machine's cores (/proc/stat over 1.5 s mid-run), against --reply-threads 0; tandemd's threads.
P=/tmp/p68; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
cpustat() {
    read -r _ a1 a2 a3 a4 a5 a6 a7 a8 _ < /proc/stat; sleep "$1"; read -r _ b1 b2 b3 b4 b5 b6 b7 b8 _ < /proc/stat
    awk -v f=$(( $(getconf CLK_TCK) * 3 / 2 )) -v u=$((b1-a1+b2-a2)) -v sy=$((b3-a3)) -v id=$((b4-a4+b5-a5)) -v sq=$((b6-a6+b7-a7+b8-a8)) \
        'BEGIN { printf "CPUSTAT user=%.2f sys=%.2f irq+steal=%.2f idle=%.2f (cores)\n", u/f, sy/f, sq/f, id/f }'
}
S=$P/t.sock
run() { # NAME ARGS...
    local name=$1; shift
    rm -rf $S $P/data $P/server.txt $P/client.txt
    TDM_REQUEST_TRACE=$P/server.txt $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn "$@" 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    TDM_OMPL_TRACE=$P/client.txt $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null & plan=$!
    ( sleep 2; cpustat 1.5 > $P/cpu.txt ) & s1=$!
    ( sleep 2; bash bench/thread_cpu.sh $pid 1.5 > $P/th.txt ) & s2=$!
    ( sleep 2; bash bench/thread_wait.sh $pid 1.5 > $P/tw.txt ) & s3=$!
    wait $plan; wait $s1 $s2 $s3
    kill $pid; wait $pid
    { echo "== $name ($*): $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"; cat $P/cpu.txt; echo "tandemd $(cat $P/th.txt)"; echo "tandemd $(cat $P/tw.txt)"
      python3 bench/request_legs.py $P/client.txt $P/server.txt | tail -6; } | tee -a $OUT/legs_call68.txt
}
run final
run rt0 --reply-threads 0
run final
echo "done at ${SECONDS}s"
