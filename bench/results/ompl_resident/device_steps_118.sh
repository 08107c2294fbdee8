set -uo pipefail
# Written in the twenty-sixth session. Run after a pack with symbols of 6cf34dc's build (STRIP=0
# ARCHIVE=1 TESTS="" OMPL=1 bench/device_pack.sh build .packs/new) and Debian's perf with its
# libraries in .perf/perf.tar.gz, carrying [".packs", ".panda", ".perf"]:
# device run "bash bench/results/ompl_resident/device_steps_118.sh".
# Call 118: call 117 found a request waiting 75 us on average (median 23) before a loop reads it, as
# long as a single state's time inside tandemd: where the loops' time goes (perf, DWARF call graphs
# of the tdm-io threads; perf over every CPU by thread), and the legs with the ring's own thread
# (the old way) and with four loops.
source bench/device_unpack.sh /tmp/p118
mkdir -p $P/perf; tar xzf .perf/perf.tar.gz -C $P/perf
PERF="env LD_LIBRARY_PATH=$P/perf/lib $P/perf/perf"
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null; echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
W=/tmp/w118; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock
start() { rm -rf $S $P/data; env "$@" $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn --engine gpu --threads 16 $TARGS 2>$P/td.err & pid=$!
          for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done; }
PLAN="$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems"
TARGS=""
# (1) the loops, DWARF call graphs
start; $PLAN > $P/plan.txt 2>/dev/null & plan=$!
sleep 2; tids=$(for t in /proc/$pid/task/*; do grep -q '^tdm-io' $t/comm && basename $t; done | paste -sd,)
$PERF record -e cpu-clock -F 2000 --call-graph dwarf,16384 -t $tids -o $P/perfd.data -- sleep 1 2> $P/perf.err || cat $P/perf.err
wait $plan; kill $pid; wait $pid; echo "== perf loops run: $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')" | tee -a $OUT/rrt_call118.txt
# (2) every CPU
start; $PLAN > $P/plan.txt 2>/dev/null & plan=$!
sleep 2; $PERF record -e cpu-clock -F 4000 -a -o $P/perf.data -- sleep 1.5 2> $P/perf.err || cat $P/perf.err
wait $plan; kill $pid; wait $pid; echo "== perf -a run: $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')" | tee -a $OUT/rrt_call118.txt
R="$PERF report -i $P/perf.data --stdio --no-children -g none"
{ $R --sort comm --percent-limit 0.2; $R --sort comm,dso,sym --percent-limit 0.15; } 2>/dev/null | grep -v "^$\|^#" | head -400 > $OUT/perf_all_call118.txt
RD="$PERF report -i $P/perfd.data --stdio --no-children"
{ $RD --sort dso,sym --percent-limit 0.3 -g none 2>/dev/null | grep -v "^$\|^#" | head -120
  echo "##### callers"; $RD --sort sym --percent-limit 1.5 -g caller,1,callee,function,percent --max-stack 16 2>/dev/null | grep -v "^$\|^#" | head -600; } > $OUT/perf_loops_call118.txt
$RD --children --sort sym --percent-limit 1 -g none 2>/dev/null | grep -v "^$\|^#" | head -150 > $OUT/perf_loops_children_call118.txt
# (3) the legs: defaults, the ring's own thread (the old way), four loops
legs() { # NAME TARGS ENV...
    local name=$1; TARGS=$2; shift 2
    rm -f $P/server.txt $P/client.txt
    start TDM_REQUEST_TRACE=$P/server.txt "$@"
    TDM_OMPL_TRACE=$P/client.txt $PLAN > $P/plan.txt 2>/dev/null
    kill $pid; wait $pid
    { echo "== $name: $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"; python3 bench/request_legs.py $P/client.txt $P/server.txt | tail -5; } | tee -a $OUT/rrt_call118.txt
}
legs defaults "" X=1
legs xthread:rt2 "--reply-threads 2" TDM_EXPRESS_ON_LOOP=0
legs io4 "--io-threads 4" X=1
legs io2 "--io-threads 2" X=1
echo "done at ${SECONDS}s"
