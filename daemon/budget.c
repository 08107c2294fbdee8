#include "budget.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"

/* Atomic: the loops charge queries' work holding the server's lock shared (io.h). */
void tdm_budget_charge(tdm_budget *b, enum tdm_mem_kind k, uint64_t n)
{
    __atomic_add_fetch(&b->used[k], n, __ATOMIC_RELAXED);
    uint64_t t = __atomic_add_fetch(&b->total, n, __ATOMIC_RELAXED);
    uint64_t p = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
    while (t > p && !__atomic_compare_exchange_n(&b->peak, &p, t, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

int tdm_budget_try_charge(tdm_budget *b, enum tdm_mem_kind k, uint64_t n)
{
    uint64_t t = __atomic_load_n(&b->total, __ATOMIC_RELAXED);
    do {
        if (t > b->max || n > b->max - t) return 0;
    } while (!__atomic_compare_exchange_n(&b->total, &t, t + n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    __atomic_add_fetch(&b->used[k], n, __ATOMIC_RELAXED);
    uint64_t p = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
    while (t + n > p && !__atomic_compare_exchange_n(&b->peak, &p, t + n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return 1;
}

void tdm_budget_release(tdm_budget *b, enum tdm_mem_kind k, uint64_t n)
{
    uint64_t u = __atomic_sub_fetch(&b->used[k], n, __ATOMIC_RELAXED) + n,
             t = __atomic_sub_fetch(&b->total, n, __ATOMIC_RELAXED) + n;
    assert(u >= n && t >= n);
    (void)u, (void)t;
}

int tdm_budget_room(const tdm_budget *b, uint64_t n)
{
    uint64_t t = __atomic_load_n(&b->total, __ATOMIC_RELAXED);
    return t <= b->max && n <= b->max - t;
}

const char *tdm_budget_describe(const tdm_budget *b, char *buf, size_t len)
{
    snprintf(buf, len,
             "%llu bytes held (partial frames %llu, queued replies %llu, queries %llu, uploads %llu, rings %llu), "
             "max-memory %llu",
             (unsigned long long)b->total, (unsigned long long)b->used[TDM_MEM_INPUT],
             (unsigned long long)b->used[TDM_MEM_OUTPUT], (unsigned long long)b->used[TDM_MEM_WORK],
             (unsigned long long)b->used[TDM_MEM_UPLOAD], (unsigned long long)b->used[TDM_MEM_RING],
             (unsigned long long)b->max);
    return buf;
}

/* The cgroup v2 memory limit of this process's group (a container's), or 0 when none can
 * be read ("max", no cgroup v2, another layout). */
static uint64_t cgroup_limit(void)
{
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (!f) return 0;
    char line[64] = "";
    uint64_t v = 0;
    if (fgets(line, sizeof line, f)) {
        char *end;
        unsigned long long x = strtoull(line, &end, 10);
        if (end != line && (*end == '\n' || *end == 0)) v = x;
    }
    fclose(f);
    return v;
}

uint64_t tdm_budget_default_max(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 8ull << 30, cg = cgroup_limit();
    if (cg && cg < phys) phys = cg;
    return phys / 2;
}

/* ---- per connection ---- */

int tdm_conn_job_admit(tdm_conn *c, uint64_t id, uint64_t mem, uint64_t reply)
{
    tdm_budget *b = &c->srv->mem;
    /* charged here at once (loops admit at once, holding the server's lock shared: io.h), handed
       to the job by tdm_conn_job_track or given back by tdm_conn_job_unadmit */
    if (tdm_budget_try_charge(b, TDM_MEM_WORK, mem + reply)) return 0;
    /* jobs answered from a pooler thread may still hold their memory: let them go first */
    tdm_srv_exclusive(c->srv);
    if (c->io->sink) { /* its own loop's: other loops' connections are theirs to account */
        tdm_query_sink_settle(c->io->sink);
        if (tdm_budget_try_charge(b, TDM_MEM_WORK, mem + reply)) return 0;
    }
    char held[256];
    b->refused++;
    tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "", -1,
                        "the server's memory for clients is full: this request needs %llu bytes, %s; retry later",
                        (unsigned long long)(mem + reply), tdm_budget_describe(b, held, sizeof held));
    return -1;
}

void tdm_conn_job_track(tdm_conn *c, tdm_query_job *j, uint64_t mem, uint64_t reply)
{
    assert(!j->tracked);
    j->tracked = 1;
    j->sink = c->io->sink;
    j->trace_read_ns = c->read_ns;
    j->mem_charged = mem;
    j->reply_bound = reply;
    c->promised += mem + reply; /* charged to the budget by tdm_conn_job_admit */
    j->conn_prev = NULL;
    j->conn_next = c->jobs;
    if (c->jobs) c->jobs->conn_prev = j;
    c->jobs = j;
    if (!tdm_conn_alive(c)) tdm_pooler_job_cancel(&j->pool);
}

void tdm_conn_job_unadmit(tdm_conn *c, uint64_t mem, uint64_t reply)
{
    tdm_budget_release(&c->srv->mem, TDM_MEM_WORK, mem + reply);
}

void tdm_conn_job_untrack(tdm_conn *c, tdm_query_job *j)
{
    if (!j->tracked) return;
    j->tracked = 0;
    tdm_budget_release(&c->srv->mem, TDM_MEM_WORK, j->mem_charged + j->reply_bound);
    assert(c->promised >= j->mem_charged + j->reply_bound);
    c->promised -= j->mem_charged + j->reply_bound;
    if (j->conn_prev) j->conn_prev->conn_next = j->conn_next;
    else c->jobs = j->conn_next;
    if (j->conn_next) j->conn_next->conn_prev = j->conn_prev;
    j->conn_prev = j->conn_next = NULL;
}

void tdm_conn_jobs_cancel(tdm_conn *c)
{
    size_t n = 0;
    for (tdm_query_job *j = c->jobs; j; j = j->conn_next, n++) tdm_pooler_job_cancel(&j->pool);
    if (n)
        tdm_log_info("conn %llu (%s): closed with %zu query jobs unanswered: those still queued are dropped unrun",
                     (unsigned long long)c->id, c->peer, n);
}

/* ---- uploads ---- */

int tdm_conn_upload_admit(tdm_conn *c, uint64_t id, uint64_t n)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    uint64_t pending = srv->upload_bytes;
    char held[256];
    if (pending > 0 && (pending >= cfg->max_upload_bytes || n > cfg->max_upload_bytes - pending)) {
        srv->mem.refused++;
        tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "", -1,
                            "%llu bytes of uploads are waiting to be stored (max_upload_bytes %llu); retry later",
                            (unsigned long long)pending, (unsigned long long)cfg->max_upload_bytes);
        return -1;
    }
    if (!tdm_budget_room(&srv->mem, n)) {
        srv->mem.refused++;
        tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "", -1,
                            "the server's memory for clients is full: this upload holds %llu bytes, %s; retry later",
                            (unsigned long long)n, tdm_budget_describe(&srv->mem, held, sizeof held));
        return -1;
    }
    return 0;
}

void tdm_upload_charge(tdm_server *srv, tdm_writer_op *op, uint64_t n)
{
    op->upload_bytes = n;
    srv->upload_bytes += n;
    tdm_budget_charge(&srv->mem, TDM_MEM_UPLOAD, n);
}

void tdm_upload_release(tdm_server *srv, tdm_writer_op *op)
{
    srv->upload_bytes -= op->upload_bytes;
    tdm_budget_release(&srv->mem, TDM_MEM_UPLOAD, op->upload_bytes);
    op->upload_bytes = 0;
}
