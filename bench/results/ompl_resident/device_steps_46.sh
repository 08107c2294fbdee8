set -uo pipefail
# Call 46: where the CPU goes in a 64-planner run (tandemd's defaults, GPU engine; then --io-threads 2):
# perf (Debian's, carried in .perf with its libraries) samples every CPU (cpu-clock, 4 kHz, call graphs)
# for 1.5 s in the middle of the run; reports by thread name and symbol, and the loop thread's callers.
P=/tmp/p46; mkdir -p $P/new $P/perf
tar xzf .packs/new.tar.gz -C $P/new
tar xzf .perf/perf.tar.gz -C $P/perf
PERF="env LD_LIBRARY_PATH=$P/perf/lib $P/perf/perf"
$PERF --version || exit 1
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null; echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
S=$P/t.sock
for io in 0 2; do
    rm -rf $S $P/data
    $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --io-threads $io --log-level warn 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null & plan=$!
    sleep 2; $PERF record -e cpu-clock -F 4000 -g -a -o $P/perf$io.data -- sleep 1.5 2> $P/perf.err || cat $P/perf.err
    wait $plan
    echo "== io-threads $io: $(tail -1 $P/plan.txt)" | tee -a $OUT/rrt_call46.txt
    kill $pid; wait $pid
    R="$PERF report -i $P/perf$io.data --stdio --no-children"
    $R --sort comm --percent-limit 0.2 2>/dev/null | grep -v "^$" | head -40 > $OUT/perf_io${io}_comm.txt
    $R --sort comm,dso,sym --percent-limit 0.15 -g none 2>/dev/null | grep -v "^$" | head -300 > $OUT/perf_io${io}_sym.txt
    for t in tandemd tdm-io1 tdm-host tdm-dispatch; do
        $R --comms $t --sort sym --percent-limit 0.5 -g caller,0.5,callee --max-stack 12 2>/dev/null | grep -v "^$" | head -400 > $OUT/perf_io${io}_$t.txt
    done
    ls -la $OUT
done
echo "done at ${SECONDS}s"
