/* Batches of robot configurations on the GPU-resident engine's slots (gpu.h,
 * "batches of robot configurations"): forward kinematics, culling, task listing
 * and the fold on the device, around the same traversal as any chunk. */
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include "../geom/bv.h"
#include "../geom/cull.h"
#include "../geom/kin.h"
#include "../geom/leaf.h"
#include "../geom/solid.h"
#include "cuda_util.h"
#include "resident.h"

/* Most (configuration, check) entries one run culls, and most configurations:
 * the scratch per slot stays in tens of MB (flags and offsets: 32 MB at the first). */
#define MAX_ENTRIES (1u << 22)
#define MAX_CONFIGS 65536u
/* Task room a configs run asks of its slot at least (the GPU engine's prepare
 * usually sized it already). */
#define MIN_TASK_ROOM 262144u

/* The program on the device: one buffer holding every array of tdm_gpu_robot,
 * these pointers into it. Passed to the kernels by value. */
typedef struct dprog {
    tdm_kin kin;
    uint32_t n_movable, n_checks, n_q;
    const tdm_xform *fixed_pose;
    const double (*fixed_centre)[4];
    const double (*slot_centre)[3];
    const tdm_gpu_check *checks;
    const tdm_gpu_pair *pairs;
    const tdm_solid_obj *solids; /* NULL: no solid */
    const tdm_dvec3 *reps;
} dprog;

/* A buffer that grows: on the device (counted against the budget) or pinned. */
typedef struct dbuf {
    void *p;
    size_t cap;
} dbuf;

struct cfg_slot {
    dbuf prog, h_prog;     /* the program, and its pinned staging */
    dbuf q, h_q;           /* configurations */
    dbuf links, pose;      /* per configuration: link and movable-object transforms */
    dbuf centre;           /* per configuration: movable objects' culling centres */
    dbuf flag, off;        /* per (configuration, check): kept, and its task index */
    dbuf map;              /* per task: (configuration, check) */
    dbuf temp;             /* CUB's scan */
    dbuf ans, h_ans;       /* answers */
    uint32_t *d_total, *h_total;
    uint64_t device_bytes; /* counted in the budget */
    /* the run in flight */
    dprog run;
    size_t n;
    uint32_t mode, cap, task_room;
};

/* ---- kernels ------------------------------------------------------------------- */

__device__ static __forceinline__ const tdm_xform *pose_of(const dprog &p, const tdm_xform *pose, size_t i, uint32_t e)
{
    return e < p.n_movable ? &pose[i * p.n_movable + e] : &p.fixed_pose[e - p.n_movable];
}

__device__ static __forceinline__ const double *centre_of(const dprog &p, const double (*centre)[4], size_t i,
                                                         uint32_t e)
{
    return e < p.n_movable ? centre[i * p.n_movable + e] : p.fixed_centre[e - p.n_movable];
}

/* One thread per configuration: its links, its movable objects' poses and
 * culling centres. */
__global__ void fk_kernel(dprog p, const double *q, uint32_t n, tdm_xform *links, tdm_xform *pose,
                          double (*centre)[4])
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    tdm_xform *lw = links + (size_t)i * p.kin.n_links;
    tdm_xform *x = pose + (size_t)i * p.n_movable;
    tdm_kin_links(&p.kin, q + (size_t)i * p.n_q, lw);
    tdm_kin_elems(&p.kin, lw, x);
    for (uint32_t m = 0; m < p.n_movable; m++) {
        const double *c = p.slot_centre[m];
        tdm_cull_centre(&x[m], tdm_d3(c[0], c[1], c[2]), centre[(size_t)i * p.n_movable + m]);
    }
}

/* One thread per (configuration, check): may its pair collide? */
__global__ void cull_kernel(dprog p, const double (*centre)[4], uint32_t n_entries, uint32_t *flag)
{
    uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_entries) return;
    uint32_t i = e / p.n_checks, k = e - i * p.n_checks;
    const tdm_gpu_check *c = &p.checks[k];
    flag[e] = tdm_cull_close(centre_of(p, centre, i, c->a), centre_of(p, centre, i, c->b), c->rsum);
}

/* One thread per kept (configuration, check) whose task index fits the room:
 * the task (as resident.cu's prepare_tasks_kernel makes it), its root pair in
 * the frontier, its cleared result and its place in the map. The last entry's
 * thread writes the frontier size and the total. */
__global__ void emit_kernel(dprog p, const tdm_xform *pose, const uint32_t *flag, const uint32_t *off,
                            uint32_t n_entries, uint32_t room, uint32_t mode, uint32_t cap, dtask *tasks,
                            dres *res, fpair *front, uint2 *map, uint32_t *cnt, uint32_t *total)
{
    uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_entries) return;
    uint32_t t = off[e];
    if (e == n_entries - 1) {
        uint32_t all = t + flag[e];
        *total = all;
        cnt[0] = all < room ? all : room;
    }
    if (!flag[e] || t >= room) return;
    uint32_t i = e / p.n_checks, k = e - i * p.n_checks;
    const tdm_gpu_check *c = &p.checks[k];
    const tdm_xform *xb = pose_of(p, pose, i, c->b);
    tdm_xform x = c->a_at_origin ? *xb : tdm_xform_rel(pose_of(p, pose, i, c->a), xb);
    tasks[t] = tdm__dtask_of(x, p.pairs[k], mode, cap);
    res[t] = dres{0, 0, 0, 0, 0, 0};
    front[t] = fpair{t, 0, 0};
    map[t] = make_uint2(i, k);
}

/* One thread per configuration: its tasks in check order, folded as the host's
 * scheduler folds them (workpile/sched.c: the first colliding check, a free
 * check with a solid partner tested for containment, contacts summed and
 * capped). A configuration whose tasks passed the room is not done. */
__global__ void fold_kernel(dprog p, const tdm_xform *pose, const uint32_t *off, const uint32_t *total, uint32_t n,
                            uint32_t room, uint32_t mode, uint32_t cap, const dres *res, const uint2 *map,
                            tdm_gpu_config_answer *ans)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t t0 = off[(size_t)i * p.n_checks];
    uint32_t t1 = i + 1 < n ? off[(size_t)(i + 1) * p.n_checks] : *total;
    tdm_gpu_config_answer a = {UINT32_MAX, 0, 0, 1};
    if (t1 > room) {
        a.done = 0;
        ans[i] = a;
        return;
    }
    uint64_t sum = 0;
    for (uint32_t t = t0; t < t1; t++) {
        uint32_t k = map[t].y;
        const dres *r = &res[t];
        if (r->colliding) {
            if (a.check == UINT32_MAX) a.check = k;
            if (mode == TDM_MODE_BOOL) break;
            sum += tdm_contacts_counted(r->count, cap);
            if (r->truncated) a.truncated = 1;
        } else if (p.solids && a.check == UINT32_MAX) {
            const tdm_gpu_check *c = &p.checks[k];
            if (!c->solid) continue;
            const tdm_xform *xa = pose_of(p, pose, i, c->a), *xb = pose_of(p, pose, i, c->b);
            if (((c->solid & TDM_SOLID_A_IN_B) && tdm_solid_holds(&p.solids[c->ob], xb, &p.solids[c->oa], p.reps, xa)) ||
                ((c->solid & TDM_SOLID_B_IN_A) && tdm_solid_holds(&p.solids[c->oa], xa, &p.solids[c->ob], p.reps, xb))) {
                a.check = k;
                if (mode == TDM_MODE_BOOL) break;
            }
        }
    }
    if (mode != TDM_MODE_BOOL) {
        if (sum > cap) {
            a.contacts = cap;
            a.truncated = 1;
        } else {
            a.contacts = (uint32_t)sum;
        }
    }
    ans[i] = a;
}

/* ---- scratch ------------------------------------------------------------------- */

/* Grows b to at least `need` bytes (contents not kept): device memory counted
 * against g's budget, or pinned host memory. */
static int grow(tdm_gpu *g, cfg_slot *c, dbuf *b, size_t need, int pinned)
{
    if (need <= b->cap) return TDM_OK;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
    if (!pinned) {
        if (tdm__gpu_budget_add(g->bud, BUD_SCRATCH, (int64_t)cap - (int64_t)b->cap) != TDM_OK) return TDM_EGPUMEM;
        c->device_bytes += cap - b->cap;
        cudaFree(b->p);
    } else {
        cudaFreeHost(b->p);
    }
    b->p = NULL;
    b->cap = 0;
    cudaError_t e = pinned ? cudaMallocHost(&b->p, cap) : cudaMalloc(&b->p, cap);
    if (e != cudaSuccess) {
        b->p = NULL;
        if (!pinned) {
            tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)cap);
            c->device_bytes -= cap;
        }
        return tdm_cuda_err(e, &g->dead);
    }
    b->cap = cap;
    return TDM_OK;
}

static void drop(dbuf *b, int pinned)
{
    if (pinned) cudaFreeHost(b->p);
    else cudaFree(b->p);
    b->p = NULL;
    b->cap = 0;
}

void tdm__gpu_configs_free(tdm_gpu *g, slot *s)
{
    cfg_slot *c = s->cfg;
    if (!c) return;
    dbuf *dev[] = {&c->prog, &c->q, &c->links, &c->pose, &c->centre, &c->flag, &c->off, &c->map, &c->temp, &c->ans};
    for (dbuf *b : dev) drop(b, 0);
    drop(&c->h_prog, 1);
    drop(&c->h_q, 1);
    drop(&c->h_ans, 1);
    cudaFree(c->d_total);
    cudaFreeHost(c->h_total);
    tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)c->device_bytes);
    free(c);
    s->cfg = NULL;
}

static int cfg_of(tdm_gpu *g, slot *s, cfg_slot **out)
{
    if (!s->cfg) {
        cfg_slot *c = (cfg_slot *)calloc(1, sizeof *c);
        if (!c) return TDM_ENOMEM;
        if (cudaMalloc(&c->d_total, sizeof(uint32_t)) != cudaSuccess ||
            cudaMallocHost(&c->h_total, sizeof(uint32_t)) != cudaSuccess) {
            cudaError_t e = cudaGetLastError();
            cudaFree(c->d_total);
            free(c);
            return tdm_cuda_err(e, &g->dead);
        }
        s->cfg = c;
    }
    *out = s->cfg;
    return TDM_OK;
}

/* ---- the API (gpu.h) --------------------------------------------------------------- */

extern "C" size_t tdm_gpu_configs_max(const tdm_gpu *g, uint32_t n_q, uint32_t n_checks)
{
    (void)g;
    (void)n_q;
    size_t n = n_checks ? MAX_ENTRIES / n_checks : MAX_CONFIGS;
    if (n > MAX_CONFIGS) n = MAX_CONFIGS;
    return n ? n : 1;
}

extern "C" int tdm_gpu_slot_configs(tdm_gpu *g, int k, size_t n, uint32_t n_q, double **configs)
{
    cfg_slot *c;
    int rc = cfg_of(g, &g->slots[k], &c);
    if (rc != TDM_OK) return rc;
    /* room for the largest run (see tdm_gpu_slot_start_configs) */
    size_t bytes = (n ? n : 1) * (n_q ? n_q : 1) * sizeof(double), big = MAX_CONFIGS * (size_t)(n_q ? n_q : 1) * sizeof(double);
    if (bytes < big) bytes = big;
    if ((rc = grow(g, c, &c->h_q, bytes, 1)) != TDM_OK || (rc = grow(g, c, &c->q, bytes, 0)) != TDM_OK) return rc;
    *configs = (double *)c->h_q.p;
    return TDM_OK;
}

/* The program's arrays, laid out in one buffer (16-byte aligned pieces). */
typedef struct prog_layout {
    size_t joints, elems, fixed_pose, fixed_centre, slot_centre, checks, pairs, solids, reps, end;
} prog_layout;

static size_t up16(size_t x) { return (x + 15) & ~(size_t)15; }

static prog_layout layout_of(const tdm_gpu_robot *r)
{
    prog_layout l;
    size_t at = 0;
    const tdm_kin *k = r->kin;
    l.joints = at, at = up16(at + (k->n_links - 1) * sizeof(tdm_kin_joint));
    l.elems = at, at = up16(at + k->n_elems * sizeof(tdm_kin_elem));
    l.fixed_pose = at, at = up16(at + r->n_fixed * sizeof(tdm_xform));
    l.fixed_centre = at, at = up16(at + r->n_fixed * 4 * sizeof(double));
    l.slot_centre = at, at = up16(at + k->n_elems * 3 * sizeof(double));
    l.checks = at, at = up16(at + r->n_checks * sizeof(tdm_gpu_check));
    l.pairs = at, at = up16(at + r->n_checks * sizeof(tdm_gpu_pair));
    l.solids = at, at = up16(at + (r->solids ? r->n_objects * sizeof(tdm_solid_obj) : 0));
    l.reps = at, at = up16(at + (r->solids ? r->n_reps * sizeof(tdm_dvec3) : 0));
    l.end = at ? at : 16;
    return l;
}

static void put(unsigned char *base, size_t at, const void *src, size_t bytes)
{
    if (bytes) memcpy(base + at, src, bytes);
}

extern "C" int tdm_gpu_slot_start_configs(tdm_gpu *g, int k, const tdm_gpu_robot *r, size_t n, uint32_t mode,
                                          uint32_t cap)
{
    slot *s = &g->slots[k];
    cfg_slot *c = s->cfg;
    const tdm_kin *kin = r->kin;
    if (!c || n == 0 || r->n_checks == 0 || kin->n_links == 0 || n > tdm_gpu_configs_max(g, kin->n_q, r->n_checks) ||
        n * (kin->n_q ? kin->n_q : 1) * sizeof(double) > c->h_q.cap)
        return TDM_EINVAL;
    uint32_t K = r->n_checks, M = kin->n_elems;
    size_t entries = n * K;
    /* scratch for the largest run this robot may make, so that runs of other sizes reuse it:
     * growing it frees and allocates device memory, which waits for the whole device */
    size_t most = tdm_gpu_configs_max(g, kin->n_q, K), sized = n > most ? n : most;
    prog_layout l = layout_of(r);
    size_t temp_bytes = 0;
    cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                                  (int)(sized * K));
    int rc;
    uint64_t room = s->cap_tasks > MIN_TASK_ROOM ? s->cap_tasks : MIN_TASK_ROOM;
    if ((rc = tdm__gpu_reserve_tasks(g, s, room)) != TDM_OK) return rc;
    room = s->cap_tasks < g->cap_pairs ? s->cap_tasks : g->cap_pairs;
    if (g->config_room && room > g->config_room) room = g->config_room;
    if (room > UINT32_MAX) room = UINT32_MAX;
    if ((rc = grow(g, c, &c->h_prog, l.end, 1)) != TDM_OK || (rc = grow(g, c, &c->prog, l.end, 0)) != TDM_OK ||
        (rc = grow(g, c, &c->links, sized * kin->n_links * sizeof(tdm_xform), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->pose, sized * (M ? M : 1) * sizeof(tdm_xform), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->centre, sized * (M ? M : 1) * 4 * sizeof(double), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->flag, sized * K * sizeof(uint32_t), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->off, sized * K * sizeof(uint32_t), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->map, room * sizeof(uint2), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->temp, temp_bytes ? temp_bytes : 16, 0)) != TDM_OK ||
        (rc = grow(g, c, &c->ans, sized * sizeof(tdm_gpu_config_answer), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->h_ans, sized * sizeof(tdm_gpu_config_answer), 1)) != TDM_OK)
        return rc;

    /* the program, packed (the staging is free: the slot's last run has finished) */
    unsigned char *h = (unsigned char *)c->h_prog.p, *d = (unsigned char *)c->prog.p;
    put(h, l.joints, kin->joints, (kin->n_links - 1) * sizeof(tdm_kin_joint));
    put(h, l.elems, kin->elems, M * sizeof(tdm_kin_elem));
    put(h, l.fixed_pose, r->fixed_pose, r->n_fixed * sizeof(tdm_xform));
    put(h, l.fixed_centre, r->fixed_centre, r->n_fixed * 4 * sizeof(double));
    put(h, l.slot_centre, r->slot_centre, M * 3 * sizeof(double));
    put(h, l.checks, r->checks, K * sizeof(tdm_gpu_check));
    put(h, l.pairs, r->pairs, K * sizeof(tdm_gpu_pair));
    if (r->solids) {
        put(h, l.solids, r->solids, r->n_objects * sizeof(tdm_solid_obj));
        put(h, l.reps, r->reps, r->n_reps * sizeof(tdm_dvec3));
    }
    dprog p;
    p.kin = *kin;
    p.kin.joints = (const tdm_kin_joint *)(d + l.joints);
    p.kin.elems = (const tdm_kin_elem *)(d + l.elems);
    p.n_movable = M;
    p.n_checks = K;
    p.n_q = kin->n_q;
    p.fixed_pose = (const tdm_xform *)(d + l.fixed_pose);
    p.fixed_centre = (const double (*)[4])(d + l.fixed_centre);
    p.slot_centre = (const double (*)[3])(d + l.slot_centre);
    p.checks = (const tdm_gpu_check *)(d + l.checks);
    p.pairs = (const tdm_gpu_pair *)(d + l.pairs);
    p.solids = r->solids ? (const tdm_solid_obj *)(d + l.solids) : NULL;
    p.reps = r->solids ? (const tdm_dvec3 *)(d + l.reps) : NULL;

    cudaStream_t st = s->stream;
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->prog.p, c->h_prog.p, l.end, cudaMemcpyHostToDevice, st));
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->q.p, c->h_q.p, n * kin->n_q * sizeof(double), cudaMemcpyHostToDevice, st));
    TDM_CUDA_TRY(&g->dead, cudaMemsetAsync(s->cnt, 0, CNT_N * sizeof(uint32_t), st));
    fk_kernel<<<tdm__gpu_blocks(n), BLOCK, 0, st>>>(p, (const double *)c->q.p, (uint32_t)n, (tdm_xform *)c->links.p,
                                                    (tdm_xform *)c->pose.p, (double (*)[4])c->centre.p);
    cull_kernel<<<tdm__gpu_blocks(entries), BLOCK, 0, st>>>(p, (const double (*)[4])c->centre.p, (uint32_t)entries,
                                                            (uint32_t *)c->flag.p);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    size_t tb = c->temp.cap;
    TDM_CUDA_TRY(&g->dead, cub::DeviceScan::ExclusiveSum(c->temp.p, tb, (const uint32_t *)c->flag.p,
                                                         (uint32_t *)c->off.p, (int)entries, st));
    emit_kernel<<<tdm__gpu_blocks(entries), BLOCK, 0, st>>>(
        p, (const tdm_xform *)c->pose.p, (const uint32_t *)c->flag.p, (const uint32_t *)c->off.p, (uint32_t)entries,
        (uint32_t)room, mode, cap, s->d_tasks, s->d_res, s->front[0], (uint2 *)c->map.p, s->cnt, c->d_total);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    c->run = p;
    c->n = n;
    c->mode = mode;
    c->cap = cap;
    c->task_room = (uint32_t)room;
    s->n = 0;
    s->it = 0;
    s->finishing = 0;
    s->configs = 1;
    s->small = 0;
    g->stats.runs++;
    return tdm__gpu_launch_group(g, s);
}

int tdm__gpu_configs_finish(tdm_gpu *g, slot *s)
{
    cfg_slot *c = s->cfg;
    cudaStream_t st = s->stream;
    fold_kernel<<<tdm__gpu_blocks(c->n), BLOCK, 0, st>>>(c->run, (const tdm_xform *)c->pose.p,
                                                         (const uint32_t *)c->off.p, c->d_total, (uint32_t)c->n,
                                                         c->task_room, c->mode, c->cap, s->d_res,
                                                         (const uint2 *)c->map.p, (tdm_gpu_config_answer *)c->ans.p);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->h_ans.p, c->ans.p, c->n * sizeof(tdm_gpu_config_answer),
                                           cudaMemcpyDeviceToHost, st));
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->h_total, c->d_total, sizeof(uint32_t), cudaMemcpyDeviceToHost, st));
    TDM_CUDA_TRY(&g->dead, cudaEventRecord(s->ready, st));
    return TDM_OK;
}

extern "C" const tdm_gpu_config_answer *tdm_gpu_slot_config_answers(tdm_gpu *g, int k, uint64_t *tasks)
{
    const cfg_slot *c = g->slots[k].cfg;
    uint32_t total = *c->h_total;
    *tasks = total < c->task_room ? total : c->task_room;
    g->stats.tasks += *tasks;
    return (const tdm_gpu_config_answer *)c->h_ans.p;
}
