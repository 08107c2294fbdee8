set -uo pipefail
# Written in the thirty-fourth session. Run after a pack with symbols of b769393's build (STRIP=0
# ARCHIVE=1 OMPL=1 TESTS="ring daemon robotd ompl" bench/device_pack.sh build .packs/new; then
# rm -rf .packs/new) and Debian's perf with its libraries in .perf/perf.tar.gz, carrying
# [".packs", ".panda", ".perf"], on a fresh machine:
# device run "bash bench/results/ompl_resident/device_steps_196.sh".
# Call 196: the thirty-third session's last commit (b769393, a tidy of the ring code not run on a GPU)
# through ring, daemon, robotd and ompl; then where the host's cores go with the planners on rings
# (perf over every CPU, by thread name and by symbol; call 118 did the same over the socket).
source bench/device_unpack.sh /tmp/p196
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ring daemon robotd ompl; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
mkdir -p $P/perf; tar xzf .perf/perf.tar.gz -C $P/perf
PERF="env LD_LIBRARY_PATH=$P/perf/lib $P/perf/perf"
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null; echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
W=/tmp/w196; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock
start() { rm -rf $S $P/data; $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn --engine gpu --threads 16 2>$P/td.err & pid=$!
          for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done; }
PLAN="$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems"
for run in 1 2; do
  start; $PLAN > $P/plan.txt 2>/dev/null & plan=$!
  sleep 1.5; $PERF record -e cpu-clock -F 4000 -a -o $P/perf$run.data -- sleep 1.5 2> $P/perf.err || cat $P/perf.err
  wait $plan; kill $pid; wait $pid; echo "== perf -a run $run (rings, the default): $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')" | tee -a $OUT/perf_all_call196.txt
done
for run in 1 2; do
  R="$PERF report -i $P/perf$run.data --stdio --no-children -g none"
  { echo "##### run $run by thread name"; $R --sort comm --percent-limit 0.2; echo "##### run $run by thread name, library, symbol"; $R --sort comm,dso,sym --percent-limit 0.15; } 2>/dev/null | grep -v "^$\|^#" | head -300 >> $OUT/perf_all_call196.txt
done
echo "done at ${SECONDS}s"
