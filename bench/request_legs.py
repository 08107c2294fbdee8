#!/usr/bin/env python3
"""Where a planner's request spends its time: joins ompl_plan's TDM_OMPL_TRACE (each Tandem
checker call's send and answer times) with tandemd's TDM_REQUEST_TRACE (each reply's frame and
write times), both CLOCK_MONOTONIC ns on one machine.

    python3 bench/request_legs.py CLIENT_TRACE SERVER_TRACE

The two are joined per connection (the client's name, sent in its Hello) in order: the k-th
request a planner sent is the k-th its connection's replies list, by send time on one side and
frame time on the other (one request in flight per connection). A pair whose kinds disagree (a
state against a motion check) or whose times are not in order (send <= frame <= write <= answer)
ends that connection's join there and is counted. Prints, per kind and in all, the mean and
median of each leg in microseconds:

    before  send -> the request's frame in tandemd (the client's write, the socket, the loop's
            read and its queue, the frame's decoding), and its two parts when the server's trace
            has reads' times: to the loop's read of the connection (the write, the socket, the
            loop's wake-up and its other work first), and from the read to the frame (the
            server's lock, the framing, the loop's finished jobs taken before it)
    inside  frame -> the reply written (tandemd's own part)
    after   written -> the answer back in the client (the socket, the client's wake-up, its read
            and decoding)
"""
import statistics
import sys
from collections import defaultdict


def read(path, server):
    by = defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            p = line.split()
            if server:  # name id kind t_frame t_written [t_read]
                kind = "M" if p[2] == "2" else "S"
                by[p[0]].append((int(p[3]), int(p[4]), kind, int(p[5]) if len(p) > 5 else 0))
            else:  # name kind t_send t_answer
                by[p[0]].append((int(p[2]), int(p[3]), p[1], 0))
    for v in by.values():
        v.sort()
    return by


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    client, server = read(sys.argv[1], False), read(sys.argv[2], True)
    legs = defaultdict(lambda: ([], [], [], [], []))
    joined = broken = 0
    for name, calls in client.items():
        replies = server.get(name, [])
        for (t_send, t_answer, kind, _), (t_frame, t_written, skind, t_read) in zip(calls, replies):
            if kind != skind or not (t_send <= t_frame <= t_written <= t_answer):
                broken += 1
                break
            joined += 1
            for k in (kind, "all"):
                b, i, a, r1, r2 = legs[k]
                b.append((t_frame - t_send) / 1e3)
                i.append((t_written - t_frame) / 1e3)
                a.append((t_answer - t_written) / 1e3)
                if t_send <= t_read <= t_frame:  # the read that brought this request
                    r1.append((t_read - t_send) / 1e3)
                    r2.append((t_frame - t_read) / 1e3)
    print(f"joined {joined} requests over {len(client)} connections; {broken} joins ended early")
    print("| kind | requests | before mean (median) us | of it, to the read | the read to the frame "
          "| inside mean (median) us | after mean (median) us |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    names = {"S": "single states", "M": "motion checks", "all": "all"}
    for k in ("S", "M", "all"):
        if k not in legs:
            continue
        b, i, a, r1, r2 = legs[k]
        cell = lambda v: f"{statistics.fmean(v):.1f} ({statistics.median(v):.1f})" if v else "-"
        print(f"| {names[k]} | {len(b)} | {cell(b)} | {cell(r1)} ({len(r1)}) | {cell(r2)} | {cell(i)} | {cell(a)} |")


if __name__ == "__main__":
    main()
