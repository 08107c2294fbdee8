set -uo pipefail
# Call 31: a bare Unix-socket round trip between two threads on the H100 machine (bench_socket_rtt:
# send, then poll and recv, as libtandem's sync client), 1 to 64 pairs at once, with no work and with
# 17 us of work on the echo side (a host lane's state), against which a planner's request is timed.
P=/tmp/p31; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
head -3 $P/new/PACK_INFO
nproc
{ $P/new/bin/bench_socket_rtt --pairs 1,4,16,64 --seconds 2; $P/new/bin/bench_socket_rtt --pairs 1,16,64 --seconds 2 --work-us 17; } | tee $OUT/socket_rtt_call31.md
