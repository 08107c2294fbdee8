#!/usr/bin/env python3
"""Keeps every core of this machine awake at the lowest priority: one SCHED_IDLE busy loop pinned
to each core, until killed. A diagnostic for hosts (virtual machines without a cpuidle driver)
where a thread woken onto a halted core waits for the core to wake up: any normal thread preempts
a SCHED_IDLE one at once, so a core running one is never halted and never makes anyone wait.

    python3 bench/idle_spinners.py &   ...   kill %1
"""
import os
import signal
import sys

pids = []
for cpu in sorted(os.sched_getaffinity(0)):
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {cpu})
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        while True:
            pass
    pids.append(pid)


def stop(*_):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
for _ in pids:
    os.wait()
