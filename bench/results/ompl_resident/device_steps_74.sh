set -uo pipefail
# Call 74: the cores' idle states. The planners' threads wait for a core about as long as they run although
# ~3 of the 16 cores are idle on average: a thread woken onto an idle core waits for it to leave its idle
# state. With /dev/cpu_dma_latency held at 0 (PM QoS: no core goes deeper than its shallowest idle state)
# against the default, 64 planners and FCL 16, the same setting for both.
P=/tmp/p74; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
id -u; ls -l /dev/cpu_dma_latency 2>&1; cat /sys/devices/system/cpu/cpuidle/current_driver /sys/devices/system/cpu/cpuidle/current_governor* 2>&1
for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do echo "$s $(cat $s/name) latency=$(cat $s/latency)us disable=$(cat $s/disable) usage=$(cat $s/usage)"; done 2>&1 | head
cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1
FCL="$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems"
run() { PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu 2>&1 | tee -a $OUT/rrt_call74.txt | grep -E '^==|WAITS'; $FCL 2>&1 | tail -1 | tee -a $OUT/fcl16.txt; }
echo "### default" | tee -a $OUT/rrt_call74.txt $OUT/fcl16.txt; run
if exec 3> /dev/cpu_dma_latency && printf '\x00\x00\x00\x00' >&3; then
  echo "### cpu_dma_latency 0 held" | tee -a $OUT/rrt_call74.txt $OUT/fcl16.txt; run
  exec 3>&-
else echo "cannot hold /dev/cpu_dma_latency"; fi
echo "### default again" | tee -a $OUT/rrt_call74.txt $OUT/fcl16.txt; run
echo "done at ${SECONDS}s"
