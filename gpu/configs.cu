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
    uint32_t n_movable, n_checks;
    const tdm_xform *fixed_pose;
    const double (*fixed_centre)[4];
    const double (*slot_centre)[3];
    const tdm_gpu_check *checks;
    const tdm_gpu_pair *pairs;
    const tdm_solid_obj *solids; /* NULL: no solid */
    const tdm_dvec3 *reps;
} dprog;

/* What every kernel of a run shares: its programs and its strides. */
typedef struct drun {
    const dprog *progs;
    const uint32_t *prog_of; /* by configuration */
    uint32_t L, M, K, n_q;   /* strides: links, movable objects, checks, values */
} drun;

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
    dbuf blocks;           /* block runs: each block's two frontier buffers */
    uint32_t *d_total, *h_total;
    uint64_t device_bytes; /* counted in the budget */
    /* the run in flight */
    drun run;
    size_t n;
    uint32_t mode, cap, task_room;
};

/* ---- kernels -------------------------------------------------------------------
 *
 * A run may hold the configurations of several programs (robot scenes: pooled
 * planners' requests): configuration i runs program progs[prog_of[i]]. Per
 * configuration the scratch is laid out for the largest program of the run (P.L
 * links, P.M movable objects, P.K checks): a smaller program's entries past its
 * own checks are never kept, so the prefix sum skips them. */

__device__ static __forceinline__ const tdm_xform *pose_of(const dprog &p, uint32_t M, const tdm_xform *pose, size_t i,
                                                          uint32_t e)
{
    return e < p.n_movable ? &pose[i * M + e] : &p.fixed_pose[e - p.n_movable];
}

__device__ static __forceinline__ const double *centre_of(const dprog &p, uint32_t M, const double (*centre)[4],
                                                         size_t i, uint32_t e)
{
    return e < p.n_movable ? centre[i * M + e] : p.fixed_centre[e - p.n_movable];
}

/* One thread per configuration: its links, its movable objects' poses and
 * culling centres. */
__global__ void fk_kernel(drun P, const double *q, uint32_t n, tdm_xform *links, tdm_xform *pose,
                          double (*centre)[4])
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const dprog &p = P.progs[P.prog_of[i]];
    tdm_xform *lw = links + (size_t)i * P.L;
    tdm_xform *x = pose + (size_t)i * P.M;
    tdm_kin_links(&p.kin, q + (size_t)i * P.n_q, lw);
    tdm_kin_elems(&p.kin, lw, x);
    for (uint32_t m = 0; m < p.n_movable; m++) {
        const double *c = p.slot_centre[m];
        tdm_cull_centre(&x[m], tdm_d3(c[0], c[1], c[2]), centre[(size_t)i * P.M + m]);
    }
}

/* One thread per (configuration, check): may its pair collide? */
__global__ void cull_kernel(drun P, const double (*centre)[4], uint32_t n_entries, uint32_t *flag)
{
    uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_entries) return;
    uint32_t i = e / P.K, k = e - i * P.K;
    const dprog &p = P.progs[P.prog_of[i]];
    if (k >= p.n_checks) {
        flag[e] = 0;
        return;
    }
    const tdm_gpu_check *c = &p.checks[k];
    flag[e] = tdm_cull_close(centre_of(p, P.M, centre, i, c->a), centre_of(p, P.M, centre, i, c->b), c->rsum);
}

/* One thread per kept (configuration, check) whose task index fits the room:
 * the task (as resident.cu's prepare_tasks_kernel makes it), its root pair in
 * the frontier, its cleared result and its place in the map. The last entry's
 * thread writes the frontier size and the total. */
__global__ void emit_kernel(drun P, const tdm_xform *pose, const uint32_t *flag, const uint32_t *off,
                            uint32_t n_entries, uint32_t room, uint32_t mode, uint32_t cap, uint32_t one_launch,
                            dtask *tasks, dres *res, fpair *front, uint2 *map, uint32_t *cnt, uint32_t *total)
{
    uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_entries) return;
    uint32_t t = off[e];
    if (e == n_entries - 1) {
        uint32_t all = t + flag[e];
        *total = all;
        if (!one_launch) cnt[0] = all < room ? all : room; /* a block run's frontier is what it hands over */
    }
    if (!flag[e] || t >= room) return;
    uint32_t i = e / P.K, k = e - i * P.K;
    const dprog &p = P.progs[P.prog_of[i]];
    const tdm_gpu_check *c = &p.checks[k];
    const tdm_xform *xb = pose_of(p, P.M, pose, i, c->b);
    tdm_xform x = c->a_at_origin ? *xb : tdm_xform_rel(pose_of(p, P.M, pose, i, c->a), xb);
    tasks[t] = tdm__dtask_of(x, p.pairs[k], mode, cap);
    res[t] = dres{0, 0, 0, 0, 0, 0};
    front[t] = fpair{t, 0, 0};
    map[t] = make_uint2(i, k);
}

/* One thread per configuration: its tasks in check order, folded as the host's
 * scheduler folds them (workpile/sched.c: the first colliding check, a free
 * check with a solid partner tested for containment, contacts summed and
 * capped). A configuration whose tasks passed the room is not done. */
__global__ void fold_kernel(drun P, const tdm_xform *pose, const uint32_t *off, const uint32_t *total, uint32_t n,
                            uint32_t room, uint32_t mode, uint32_t cap, const dres *res, const uint2 *map,
                            tdm_gpu_config_answer *ans)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const dprog &p = P.progs[P.prog_of[i]];
    uint32_t t0 = off[(size_t)i * P.K];
    uint32_t t1 = i + 1 < n ? off[(size_t)(i + 1) * P.K] : *total;
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
            const tdm_xform *xa = pose_of(p, P.M, pose, i, c->a), *xb = pose_of(p, P.M, pose, i, c->b);
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
    dbuf *dev[] = {&c->prog, &c->q, &c->links, &c->pose, &c->centre, &c->flag, &c->off, &c->map, &c->temp, &c->ans,
                   &c->blocks};
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

/* Block runs (resident.cu's block_run_kernel): tasks a block takes at most (from the
 * run's upper bound on tasks; the device spreads the tasks it listed over the blocks),
 * the most blocks, and each block's frontier room in pairs. */
#define BLOCK_RUN_TASKS 4u
#define BLOCK_RUN_MAX 256u
#define BLOCK_RUN_ROOM 8192u

/* Room the programs' buffers start with, so that runs of a few more scenes than
 * the last seldom grow them (growing the device buffer waits for the device). */
#define PROG_ROOM_MIN (256u << 10)

extern "C" int tdm_gpu_slot_start_configs(tdm_gpu *g, int k, const tdm_gpu_robot *robots, const uint32_t *robot_of,
                                          size_t n, uint32_t mode, uint32_t cap)
{
    slot *s = &g->slots[k];
    cfg_slot *c = s->cfg;
    if (!c || n == 0 || n > UINT32_MAX) return TDM_EINVAL;
    /* the programs this run uses, robots[lo .. hi], and the strides of the largest */
    uint32_t lo = 0, hi = 0;
    if (robot_of) {
        lo = UINT32_MAX;
        for (size_t i = 0; i < n; i++) {
            if (robot_of[i] < lo) lo = robot_of[i];
            if (robot_of[i] > hi) hi = robot_of[i];
        }
    }
    uint32_t n_prog = hi - lo + 1, n_q = robots[lo].kin->n_q, L = 0, M = 0, K = 0;
    for (uint32_t r = lo; r <= hi; r++) {
        const tdm_kin *kin = robots[r].kin;
        if (robots[r].n_checks == 0 || kin->n_links == 0 || kin->n_q != n_q) return TDM_EINVAL;
        if (kin->n_links > L) L = kin->n_links;
        if (kin->n_elems > M) M = kin->n_elems;
        if (robots[r].n_checks > K) K = robots[r].n_checks;
    }
    if (M == 0) M = 1;
    if (n > tdm_gpu_configs_max(g, n_q, K) || n * (n_q ? n_q : 1) * sizeof(double) > c->h_q.cap) return TDM_EINVAL;
    size_t entries = n * K;
    /* scratch for the largest run of such programs, so that runs of other sizes reuse it:
     * growing it frees and allocates device memory, which waits for the whole device */
    size_t most = tdm_gpu_configs_max(g, n_q, K), sized = n > most ? n : most;
    /* the programs' arrays one after the other, then their dprogs, then each configuration's program */
    size_t at = 0;
    for (uint32_t r = lo; r <= hi; r++) at += layout_of(&robots[r]).end;
    size_t progs_at = at, of_at = up16(progs_at + n_prog * sizeof(dprog)), prog_bytes = of_at + n * sizeof(uint32_t);
    if (prog_bytes < PROG_ROOM_MIN) prog_bytes = PROG_ROOM_MIN;
    size_t temp_bytes = 0;
    cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                                  (int)(sized * K));
    int rc;
    uint64_t room = s->cap_tasks > MIN_TASK_ROOM ? s->cap_tasks : MIN_TASK_ROOM;
    if ((rc = tdm__gpu_reserve_tasks(g, s, room)) != TDM_OK) return rc;
    room = s->cap_tasks < g->cap_pairs ? s->cap_tasks : g->cap_pairs;
    if (g->config_room && room > g->config_room) room = g->config_room;
    if (room > UINT32_MAX) room = UINT32_MAX;
    if ((rc = grow(g, c, &c->h_prog, prog_bytes, 1)) != TDM_OK || (rc = grow(g, c, &c->prog, prog_bytes, 0)) != TDM_OK ||
        (rc = grow(g, c, &c->links, sized * L * sizeof(tdm_xform), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->pose, sized * M * sizeof(tdm_xform), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->centre, sized * M * 4 * sizeof(double), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->flag, sized * K * sizeof(uint32_t), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->off, sized * K * sizeof(uint32_t), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->map, room * sizeof(uint2), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->temp, temp_bytes ? temp_bytes : 16, 0)) != TDM_OK ||
        (rc = grow(g, c, &c->ans, sized * sizeof(tdm_gpu_config_answer), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->h_ans, sized * sizeof(tdm_gpu_config_answer), 1)) != TDM_OK)
        return rc;

    /* a run of few (configuration, check) entries, so few tasks, goes in one launch (resident.cu's
     * block runs: level by level inside each block), then its fold, and one look from the host
     * when nothing is handed over to the levels */
    int block = g->cfg.traversal == TDM_GPU_TRAVERSE_PAIRS && g->block_config_entries &&
                entries <= g->block_config_entries;
    uint32_t upper = (uint32_t)(entries < room ? entries : room), n_blocks = 0; /* tasks at most */
    if (block) {
        n_blocks = (upper + BLOCK_RUN_TASKS - 1) / BLOCK_RUN_TASKS;
        if (n_blocks > BLOCK_RUN_MAX) n_blocks = BLOCK_RUN_MAX;
        /* sized once for the most blocks: growing waits for the device */
        if ((rc = grow(g, c, &c->blocks, (size_t)BLOCK_RUN_MAX * 2 * BLOCK_RUN_ROOM * sizeof(fpair), 0)) != TDM_OK)
            return rc;
    }

    /* the programs, packed (the staging is free: the slot's last run has finished) */
    unsigned char *h = (unsigned char *)c->h_prog.p, *d = (unsigned char *)c->prog.p;
    dprog *hp = (dprog *)(h + progs_at);
    at = 0;
    for (uint32_t r = lo; r <= hi; r++) {
        const tdm_gpu_robot *R = &robots[r];
        const tdm_kin *kin = R->kin;
        uint32_t KR = R->n_checks, MR = kin->n_elems;
        prog_layout l = layout_of(R);
        unsigned char *hb = h + at, *db = d + at;
        put(hb, l.joints, kin->joints, (kin->n_links - 1) * sizeof(tdm_kin_joint));
        put(hb, l.elems, kin->elems, MR * sizeof(tdm_kin_elem));
        put(hb, l.fixed_pose, R->fixed_pose, R->n_fixed * sizeof(tdm_xform));
        put(hb, l.fixed_centre, R->fixed_centre, R->n_fixed * 4 * sizeof(double));
        put(hb, l.slot_centre, R->slot_centre, MR * 3 * sizeof(double));
        put(hb, l.checks, R->checks, KR * sizeof(tdm_gpu_check));
        put(hb, l.pairs, R->pairs, KR * sizeof(tdm_gpu_pair));
        if (R->solids) {
            put(hb, l.solids, R->solids, R->n_objects * sizeof(tdm_solid_obj));
            put(hb, l.reps, R->reps, R->n_reps * sizeof(tdm_dvec3));
        }
        dprog p;
        p.kin = *kin;
        p.kin.joints = (const tdm_kin_joint *)(db + l.joints);
        p.kin.elems = (const tdm_kin_elem *)(db + l.elems);
        p.n_movable = MR;
        p.n_checks = KR;
        p.fixed_pose = (const tdm_xform *)(db + l.fixed_pose);
        p.fixed_centre = (const double (*)[4])(db + l.fixed_centre);
        p.slot_centre = (const double (*)[3])(db + l.slot_centre);
        p.checks = (const tdm_gpu_check *)(db + l.checks);
        p.pairs = (const tdm_gpu_pair *)(db + l.pairs);
        p.solids = R->solids ? (const tdm_solid_obj *)(db + l.solids) : NULL;
        p.reps = R->solids ? (const tdm_dvec3 *)(db + l.reps) : NULL;
        memcpy(&hp[r - lo], &p, sizeof p);
        at += l.end;
    }
    uint32_t *of = (uint32_t *)(h + of_at);
    for (size_t i = 0; i < n; i++) of[i] = robot_of ? robot_of[i] - lo : 0;
    drun P;
    P.progs = (const dprog *)(d + progs_at);
    P.prog_of = (const uint32_t *)(d + of_at);
    P.L = L;
    P.M = M;
    P.K = K;
    P.n_q = n_q;

    cudaStream_t st = s->stream;
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->prog.p, c->h_prog.p, of_at + n * sizeof(uint32_t),
                                           cudaMemcpyHostToDevice, st));
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->q.p, c->h_q.p, n * n_q * sizeof(double), cudaMemcpyHostToDevice, st));
    TDM_CUDA_TRY(&g->dead, cudaMemsetAsync(s->cnt, 0, CNT_N * sizeof(uint32_t), st));
    fk_kernel<<<tdm__gpu_blocks(n), BLOCK, 0, st>>>(P, (const double *)c->q.p, (uint32_t)n, (tdm_xform *)c->links.p,
                                                    (tdm_xform *)c->pose.p, (double (*)[4])c->centre.p);
    cull_kernel<<<tdm__gpu_blocks(entries), BLOCK, 0, st>>>(P, (const double (*)[4])c->centre.p, (uint32_t)entries,
                                                            (uint32_t *)c->flag.p);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    size_t tb = c->temp.cap;
    TDM_CUDA_TRY(&g->dead, cub::DeviceScan::ExclusiveSum(c->temp.p, tb, (const uint32_t *)c->flag.p,
                                                         (uint32_t *)c->off.p, (int)entries, st));
    emit_kernel<<<tdm__gpu_blocks(entries), BLOCK, 0, st>>>(
        P, (const tdm_xform *)c->pose.p, (const uint32_t *)c->flag.p, (const uint32_t *)c->off.p, (uint32_t)entries,
        (uint32_t)room, mode, cap, (uint32_t)block, s->d_tasks, s->d_res, s->front[0], (uint2 *)c->map.p, s->cnt,
        c->d_total);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    c->run = P;
    c->n = n;
    c->mode = mode;
    c->cap = cap;
    c->task_room = (uint32_t)room;
    s->n = 0;
    s->it = 0;
    s->finishing = 0;
    s->configs = 1;
    s->small = block;
    g->stats.runs++;
    if (block) {
        /* the answers too, at once: they stand unless the run hands pairs over to the levels,
           whose end folds again (tdm__gpu_configs_finish) */
        uint32_t room_pairs = g->block_room && g->block_room < BLOCK_RUN_ROOM ? g->block_room : BLOCK_RUN_ROOM;
        if ((rc = tdm__gpu_block_configs(g, s, upper, c->d_total, c->blocks.p, room_pairs, n_blocks)) != TDM_OK)
            return rc;
        return tdm__gpu_configs_finish(g, s);
    }
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
