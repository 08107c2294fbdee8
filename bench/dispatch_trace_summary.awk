# Summarises TDM_DISPATCH_TRACE lines (workpile/pooler.h) from tandemd's stderr: per pooler thread and
# in all, the batches, their mean jobs and queries, and the mean milliseconds a batch spent waiting
# for work before it (waited), running (ran: gather, engine, results, replies) and its oldest job in
# the queue (queued).   awk -f bench/dispatch_trace_summary.awk tandemd.err
/^dispatch [0-9]+: waited/ {
    t = $2; sub(":", "", t)
    line = $0; gsub(/[(),]/, " ", line); n = split(line, f, " ")
    for (i = 1; i < n; i++) {
        if (f[i] == "waited") w = f[i + 1]
        if (f[i] == "jobs") j = f[i - 1]
        if (f[i] == "queries") q = f[i - 1]
        if (f[i] == "ran") r = f[i + 1]
        if (f[i] == "gather") g = f[i + 1]
        if (f[i] == "engine") e = f[i + 1]
        if (f[i] == "results") s = f[i + 1]
        if (f[i] == "replies") p = f[i + 1]
        if (f[i] == "queued") u = f[i + 1]
    }
    for (k = 0; k < 2; k++) {
        key = k ? "all" : t
        N[key]++; W[key] += w; J[key] += j; Q[key] += q; R[key] += r; G[key] += g; E[key] += e; S[key] += s
        P[key] += p; U[key] += u
    }
}
END {
    printf "%-6s %8s %8s %8s %9s %8s %8s %8s %8s %8s %8s\n", "thread", "batches", "jobs", "queries", "waited", "ran",
        "gather", "engine", "results", "replies", "queued"
    for (key in N)
        printf "%-6s %8d %8.1f %8.0f %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", key, N[key], J[key] / N[key],
            Q[key] / N[key], W[key] / N[key], R[key] / N[key], G[key] / N[key], E[key] / N[key], S[key] / N[key],
            P[key] / N[key], U[key] / N[key]
}
