set -uo pipefail
P=/tmp/p7; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
# every engine run of the 64-planner row, traced (TDM_ENGINE_TRACE): configurations, robot scenes, tasks, ms
rm -rf /tmp/tp && mkdir -p /tmp/tp
TDM_ENGINE_TRACE=1 $P/new/bin/tandemd --listen unix:/tmp/tp/s.sock --data-dir /tmp/tp/data --engine gpu --engine-lanes 5 --log-level warn 2>/tmp/tp/trace.txt & pid=$!
for i in $(seq 300); do [[ -S /tmp/tp/s.sock ]] && break; sleep 0.1; done
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:/tmp/tp/s.sock --per-scenario 100 $W/problems 2>/dev/null | tail -1
kill $pid; wait $pid 2>/dev/null
grep -c 'engine run:' /tmp/tp/trace.txt
awk '/^engine run: .* configurations of .* robot scenes on the device/ { n = $3; g = $6; t = $(NF - 3); ms = $(NF - 1)
       b = n <= 8 ? "1-8" : n <= 64 ? "9-64" : n <= 256 ? "65-256" : n <= 1024 ? "257-1024" : ">1024"
       c[b]++; N[b] += n; G[b] += g; T[b] += t; M[b] += ms }
     END { for (b in c) printf "runs of %s configurations: %d, mean %.0f configs, %.1f scenes, %.0f tasks (%.1f a configuration), %.3f ms\n",
           b, c[b], N[b] / c[b], G[b] / c[b], T[b] / c[b], T[b] / N[b], M[b] / c[b] }' /tmp/tp/trace.txt | sort | tee $OUT/engine_runs.txt
grep 'engine run:' /tmp/tp/trace.txt | head -3
