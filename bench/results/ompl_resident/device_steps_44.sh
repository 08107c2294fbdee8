set -uo pipefail
# Call 44: a planner's request, leg by leg. 64 RRTConnect planners through tandemd (defaults, GPU
# engine), 700 problems, with tandemd's TDM_REQUEST_TRACE (each reply's frame and write times) and
# ompl_plan's TDM_OMPL_TRACE (each checker call's send and answer times), joined by
# bench/request_legs.py.
P=/tmp/p44; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock; rm -rf $S $P/data $P/server.txt $P/client.txt
TDM_REQUEST_TRACE=$P/server.txt $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn 2>$P/td.err & pid=$!
for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
TDM_OMPL_TRACE=$P/client.txt $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems 2>/dev/null | tail -1 | tee $OUT/plan_call44.txt
kill $pid; wait $pid
wc -l $P/server.txt $P/client.txt
python3 bench/request_legs.py $P/client.txt $P/server.txt | tee $OUT/legs_call44.md
echo "done at ${SECONDS}s"
