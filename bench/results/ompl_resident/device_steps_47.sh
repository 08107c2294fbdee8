set -uo pipefail
# Call 47: (1) where the CPU goes in a 64-planner run (tandemd's defaults), with symbols this time
# (pack made with STRIP=0): perf samples every CPU (cpu-clock, 4 kHz) for 1.5 s mid-run, reported by
# thread name and by symbol; then tandemd alone with DWARF call graphs (1 kHz, 1 s) for its pool
# workers' (tdm-cpu) and loop's callers. (2) the row with fewer engine threads (--threads 4: 3
# pool workers instead of 15), base / th4 / base / th4.
P=/tmp/p47; mkdir -p $P/new $P/perf
tar xzf .packs/new.tar.gz -C $P/new
tar xzf .perf/perf.tar.gz -C $P/perf
PERF="env LD_LIBRARY_PATH=$P/perf/lib $P/perf/perf"
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null; echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
S=$P/t.sock; rm -rf $S $P/data
$P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn 2>$P/td.err & pid=$!
for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
PLAN="$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems"
$PLAN > $P/plan.txt 2>/dev/null & plan=$!
sleep 2; $PERF record -e cpu-clock -F 4000 -a -o $P/perf.data -- sleep 1.5 2> $P/perf.err || cat $P/perf.err
wait $plan; echo "== perf -a run: $(tail -1 $P/plan.txt)" | tee -a $OUT/rrt_call47.txt
$PLAN > $P/plan.txt 2>/dev/null & plan=$!
sleep 2; $PERF record -e cpu-clock -F 1000 --call-graph dwarf,16384 -p $pid -o $P/perfd.data -- sleep 1 2> $P/perf.err || cat $P/perf.err
wait $plan; echo "== perf dwarf run: $(tail -1 $P/plan.txt)" | tee -a $OUT/rrt_call47.txt
kill $pid; wait $pid
R="$PERF report -i $P/perf.data --stdio --no-children -g none"
{ $R --sort comm --percent-limit 0.2; $R --sort comm,dso,sym --percent-limit 0.1; } 2>/dev/null | grep -v "^$\|^#" | head -400 > $OUT/perf_all_call47.txt
RD="$PERF report -i $P/perfd.data --stdio --no-children"
for t in tdm-cpu tandemd tdm-host tdm-dispatch; do
    echo "##### $t"; $RD --comms $t --sort sym --percent-limit 2 -g caller,2,callee,function,percent --max-stack 14 2>/dev/null | grep -v "^$\|^#" | head -250
done > $OUT/perf_callers_call47.txt
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:th4 gpu gpu:th4 2>&1 | grep -v "^  thread" | tee $OUT/rrt_th_call47.txt
echo "done at ${SECONDS}s"
