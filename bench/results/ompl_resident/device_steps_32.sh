set -uo pipefail
# Call 32: one request's round trip through tandemd (defaults, GPU engine) with nothing else running:
# bench_robot_server, 1 and 64 clients, one request in flight each: single random Panda configurations
# (host lanes) and single motions (~0.8 rad a joint at most, R 0.02), bookshelf_small scene 1; tandemd's
# threads' CPU during the 64-client runs. Inputs: .rtt/ (random configurations and motions, seed 1).
# .rtt/ was made here with (the Panda's joint limits):
#   python3 -c "
#   import random; random.seed(1)
#   lo=[-2.8973,-1.7628,-2.8973,-3.0718,-2.8973,-0.0175,-2.8973]; hi=[2.8973,1.7628,2.8973,-0.0698,2.8973,3.7525,2.8973]
#   f=open('.rtt/configs.txt','w')
#   for i in range(4000): f.write(' '.join('%.6f'%random.uniform(l,h) for l,h in zip(lo,hi))+'\\n')
#   f=open('.rtt/motions.txt','w')
#   for i in range(4000):
#       a=[random.uniform(l,h) for l,h in zip(lo,hi)]; b=[min(h,max(l,x+random.uniform(-0.8,0.8))) for x,l,h in zip(a,lo,hi)]
#       f.write(' '.join('%.6f'%x for x in a+b)+'\\n')"
P=/tmp/p32; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock; rm -f $S
$P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn 2>$P/td.err & pid=$!
for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
R="$P/new/bin/bench_robot_server --server unix:$S --urdf .panda/panda.urdf --srdf .panda/panda.srdf --world $W/problems/bookshelf_small_panda/scene0001.yaml --batch 1 --inflight 1 --seconds 3"
{
for c in 1 64; do
  $R --configs .rtt/configs.txt --clients $c & b=$!; sleep 1.5; [[ $c == 64 ]] && bash bench/thread_cpu.sh $pid 1; wait $b
  $R --motions .rtt/motions.txt --resolution 0.02 --clients $c & b=$!; sleep 1.5; [[ $c == 64 ]] && bash bench/thread_cpu.sh $pid 1; wait $b
done
} 2>&1 | tee $OUT/rtt_call32.txt
kill $pid; wait
echo "done at ${SECONDS}s"
