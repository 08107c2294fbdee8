set -uo pipefail
P=/tmp/p11; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
timeout 200 $P/new/bin/test_robot_scene > $OUT/tests.txt 2>&1; echo "## test_robot_scene exit $?" >> $OUT/tests.txt
grep -E "Synthesis|exit" $OUT/tests.txt
# the flag: the planners' row's first 10 problems a scenario with the cache at its default and off
for pc in 16777216 0; do
  rm -rf /tmp/tp && mkdir -p /tmp/tp
  $P/new/bin/tandemd --listen unix:/tmp/tp/s.sock --data-dir /tmp/tp/data --engine gpu --gpu-program-cache $pc --log-level warn 2>/tmp/tp/err & pid=$!
  for i in $(seq 300); do [[ -S /tmp/tp/s.sock ]] && break; sleep 0.1; done
  echo "## --gpu-program-cache $pc: $($P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:/tmp/tp/s.sock --per-scenario 20 $W/problems 2>/dev/null | tail -1)"
  kill $pid; wait $pid 2>/dev/null
done | tee $OUT/flag.txt
