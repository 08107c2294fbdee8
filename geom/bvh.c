/* OBB-tree construction; see bvh.h for the layout and the method. */
#include "bvh.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tri.h"

/* A subtree of at least this many triangles may be built on a thread of its own (threads > 1). */
#define SPAWN_MIN_TRIS 16384

typedef struct build_ctx {
    const tdm_mesh *mesh;
    uint32_t *idx;     /* triangle ids, partitioned in place into leaf order */
    double *key;       /* scratch: split key per triangle */
    tdm_bvh_node *nodes;
    uint32_t n_nodes;  /* the next node's index (each thread's own) */
    int spawn;         /* levels below which a right subtree may still go to a thread of its own */
} build_ctx;

static tdm_dvec3 vert(const tdm_mesh *m, uint32_t v)
{
    return tdm_d3(m->verts[3 * v], m->verts[3 * v + 1], m->verts[3 * v + 2]);
}

/* Eigenvectors of a symmetric 3x3 matrix by cyclic Jacobi rotations; columns of v. */
static void jacobi_eigen(double a[3][3], double v[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) v[i][j] = i == j;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        double diag = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
        if (off <= 1e-15 * diag || off == 0) break;
        for (int p = 0; p < 2; p++) {
            for (int q = p + 1; q < 3; q++) {
                if (a[p][q] == 0) continue;
                double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; k++) { /* a = J^T a J */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
        }
    }
}

/* Orthonormal right-handed axes from three approximate directions. */
static void orthonormalize(tdm_dvec3 ax[3])
{
    ax[0] = tdm_d3_scale(ax[0], 1 / tdm_d3_len(ax[0]));
    ax[1] = tdm_d3_sub(ax[1], tdm_d3_scale(ax[0], tdm_d3_dot(ax[0], ax[1])));
    double l = tdm_d3_len(ax[1]);
    if (!(l > 1e-12)) { /* pick any perpendicular */
        tdm_dvec3 e = fabs(ax[0].x) < 0.6 ? tdm_d3(1, 0, 0) : tdm_d3(0, 1, 0);
        ax[1] = tdm_d3_cross(ax[0], e);
        l = tdm_d3_len(ax[1]);
    }
    ax[1] = tdm_d3_scale(ax[1], 1 / l);
    ax[2] = tdm_d3_cross(ax[0], ax[1]);
}

/* The tightest box with the given axes around the triangles idx[0..n); written to
 * *node in float, rounded outward so it contains every vertex. Returns the box's
 * surface measure e0e1 + e1e2 + e2e0. */
static double fit_with_axes(const tdm_mesh *m, const uint32_t *idx, uint32_t n, const tdm_dvec3 ax_in[3],
                            tdm_bvh_node *node)
{
    float axf[3][3];
    tdm_dvec3 ax[3];
    for (int k = 0; k < 3; k++) {
        axf[k][0] = (float)ax_in[k].x; axf[k][1] = (float)ax_in[k].y; axf[k][2] = (float)ax_in[k].z;
        ax[k] = tdm_d3(axf[k][0], axf[k][1], axf[k][2]); /* measure with the axes as stored */
    }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            tdm_dvec3 p = vert(m, m->tris[3 * idx[i] + c]);
            for (int k = 0; k < 3; k++) {
                double s = tdm_d3_dot(ax[k], p);
                if (s < lo[k]) lo[k] = s; /* finite (the mesh's checks): fmin's value, inlined */
                if (s > hi[k]) hi[k] = s;
            }
        }
    tdm_dvec3 cd = tdm_d3(0, 0, 0);
    for (int k = 0; k < 3; k++) cd = tdm_d3_add(cd, tdm_d3_scale(ax[k], 0.5 * (lo[k] + hi[k])));
    float cf[3] = {(float)cd.x, (float)cd.y, (float)cd.z};
    tdm_dvec3 c = tdm_d3(cf[0], cf[1], cf[2]);
    double mag = fabs(c.x) + fabs(c.y) + fabs(c.z);
    double surf = 0, e[3];
    for (int k = 0; k < 3; k++) {
        double cc = tdm_d3_dot(ax[k], c);
        double ext = hi[k] - cc > cc - lo[k] ? hi[k] - cc : cc - lo[k];
        /* outward rounding: relative, and absolute for boxes far from the origin */
        e[k] = ext * (1 + 4e-6) + 4 * FLT_EPSILON * mag;
    }
    surf = e[0] * e[1] + e[1] * e[2] + e[2] * e[0];
    memcpy(node->axis, axf, sizeof axf);
    memcpy(node->center, cf, sizeof cf);
    for (int k = 0; k < 3; k++) node->extent[k] = (float)e[k] * (1 + 2 * FLT_EPSILON);
    return surf;
}

/* Covariance fit (Gottschalk et al.): area-weighted second moments of the
 * triangles, or of their vertices when the set has no area; kept only when it
 * beats the axis-aligned box. */
static double fit_obb(const tdm_mesh *m, const uint32_t *idx, uint32_t n, tdm_bvh_node *node)
{
    double area_sum = 0, mu[3] = {0, 0, 0}, s[3][3] = {{0}};
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *t = &m->tris[3 * idx[i]];
        tdm_dvec3 p = vert(m, t[0]), q = vert(m, t[1]), r = vert(m, t[2]);
        double a = 0.5 * tdm_d3_len(tdm_d3_cross(tdm_d3_sub(q, p), tdm_d3_sub(r, p)));
        double c[3] = {(p.x + q.x + r.x) / 3, (p.y + q.y + r.y) / 3, (p.z + q.z + r.z) / 3};
        double pv[3] = {p.x, p.y, p.z}, qv[3] = {q.x, q.y, q.z}, rv[3] = {r.x, r.y, r.z};
        area_sum += a;
        for (int j = 0; j < 3; j++) {
            mu[j] += a * c[j];
            for (int k = 0; k < 3; k++)
                s[j][k] += a / 12 * (9 * c[j] * c[k] + pv[j] * pv[k] + qv[j] * qv[k] + rv[j] * rv[k]);
        }
    }
    double cov[3][3];
    if (area_sum > 0) {
        for (int j = 0; j < 3; j++) mu[j] /= area_sum;
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) cov[j][k] = s[j][k] / area_sum - mu[j] * mu[k];
    } else {
        double cnt = 3.0 * n;
        double sm[3] = {0, 0, 0}, ss[3][3] = {{0}};
        for (uint32_t i = 0; i < n; i++)
            for (int c = 0; c < 3; c++) {
                tdm_dvec3 p = vert(m, m->tris[3 * idx[i] + c]);
                double pv[3] = {p.x, p.y, p.z};
                for (int j = 0; j < 3; j++) {
                    sm[j] += pv[j];
                    for (int k = 0; k < 3; k++) ss[j][k] += pv[j] * pv[k];
                }
            }
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) cov[j][k] = ss[j][k] / cnt - sm[j] * sm[k] / (cnt * cnt);
    }
    double v[3][3];
    jacobi_eigen(cov, v);
    tdm_dvec3 ax[3] = {tdm_d3(v[0][0], v[1][0], v[2][0]), tdm_d3(v[0][1], v[1][1], v[2][1]),
                       tdm_d3(v[0][2], v[1][2], v[2][2])};
    int ok = 1;
    for (int k = 0; k < 3; k++) ok &= isfinite(ax[k].x) && isfinite(ax[k].y) && isfinite(ax[k].z);
    tdm_bvh_node cand;
    double best = INFINITY;
    if (ok) {
        orthonormalize(ax);
        best = fit_with_axes(m, idx, n, ax, node);
    }
    tdm_dvec3 id[3] = {tdm_d3(1, 0, 0), tdm_d3(0, 1, 0), tdm_d3(0, 0, 1)};
    double aa = fit_with_axes(m, idx, n, id, &cand);
    if (aa < best) {
        *node = cand;
        best = aa;
    }
    return best;
}

static void swap_u32(uint32_t *a, uint32_t *b) { uint32_t t = *a; *a = *b; *b = t; }
static void swap_d(double *a, double *b) { double t = *a; *a = *b; *b = t; }

/* Reorders key/idx[0..n) so that position k holds the k-th smallest key, smaller
 * or equal keys before it and greater or equal after (quickselect with a
 * three-way partition, so runs of equal keys stay linear). */
static void select_kth(double *key, uint32_t *idx, uint32_t n, uint32_t k)
{
    uint32_t lo = 0, hi = n; /* [lo, hi) */
    while (hi - lo > 1) {
        double a = key[lo], b = key[lo + (hi - lo) / 2], c = key[hi - 1];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        uint32_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            if (key[i] < pivot) { swap_d(&key[i], &key[lt]); swap_u32(&idx[i], &idx[lt]); lt++; i++; }
            else if (key[i] > pivot) { gt--; swap_d(&key[i], &key[gt]); swap_u32(&idx[i], &idx[gt]); }
            else i++;
        }
        if (k < lt) hi = lt;
        else if (k >= gt) lo = gt;
        else return;
    }
}

/* Moves the keys below `mean` to the front of key/idx[0..n); returns their count. */
static uint32_t partition_below(double *key, uint32_t *idx, uint32_t n, double mean)
{
    uint32_t l = 0, r = n;
    while (l < r) {
        if (key[l] < mean) {
            l++;
        } else {
            r--;
            swap_d(&key[l], &key[r]);
            swap_u32(&idx[l], &idx[r]);
        }
    }
    return l;
}

static void build_node(build_ctx *ctx, uint32_t ni, uint32_t lo, uint32_t hi, uint32_t depth);

/* A right subtree built on a thread of its own. */
typedef struct right_job {
    build_ctx ctx;
    uint32_t ni, lo, hi, depth;
} right_job;

static void *right_main(void *arg)
{
    right_job *r = arg;
    build_node(&r->ctx, r->ni, r->lo, r->hi, r->depth);
    return NULL;
}

/* The internal nodes of nodes[0..count) point `shift` places lower (the block moved down). */
static void relocate(tdm_bvh_node *nodes, uint32_t count, uint32_t shift)
{
    for (uint32_t i = 0; i < count; i++)
        if (!tdm_node_is_leaf(&nodes[i])) nodes[i].link -= (int32_t)shift;
}

/* Node ni's two subtrees, left [lo, mid) then right [mid, hi), built one after the other, or
 * at once: the right one on a thread of its own, from the index after the most nodes the left
 * one can take (2 (mid - lo) - 1), then moved down to just after the left one. The same nodes
 * in the same places either way: a node's left child follows it, its right child follows the
 * left subtree. */
static void build_children(build_ctx *ctx, uint32_t ni, uint32_t lo, uint32_t mid, uint32_t hi, uint32_t depth)
{
    uint32_t left = ctx->n_nodes++;
    if (ctx->spawn > 0 && hi - lo >= SPAWN_MIN_TRIS) {
        uint32_t right0 = left + 2 * (mid - lo) - 1;
        right_job rj = {*ctx, right0, mid, hi, depth + 1};
        rj.ctx.spawn = ctx->spawn - 1;
        rj.ctx.n_nodes = right0 + 1;
        pthread_t th;
        int threaded = pthread_create(&th, NULL, right_main, &rj) == 0;
        ctx->spawn--;
        build_node(ctx, left, lo, mid, depth + 1);
        ctx->spawn++;
        if (threaded) pthread_join(th, NULL);
        else right_main(&rj); /* no thread: here, after the left one */
        uint32_t right = ctx->n_nodes, count = rj.ctx.n_nodes - right0;
        if (right != right0) {
            memmove(&ctx->nodes[right], &ctx->nodes[right0], sizeof *ctx->nodes * count);
            relocate(&ctx->nodes[right], count, right0 - right);
        }
        ctx->n_nodes = right + count;
        ctx->nodes[ni].link = (int32_t)right;
        return;
    }
    build_node(ctx, left, lo, mid, depth + 1);
    uint32_t right = ctx->n_nodes++;
    build_node(ctx, right, mid, hi, depth + 1);
    ctx->nodes[ni].link = (int32_t)right;
}

static void build_node(build_ctx *ctx, uint32_t ni, uint32_t lo, uint32_t hi, uint32_t depth)
{
    const tdm_mesh *m = ctx->mesh;
    uint32_t n = hi - lo;
    tdm_bvh_node *node = &ctx->nodes[ni];
    double surf = fit_obb(m, ctx->idx + lo, n, node);
    /* Two triangles share a leaf only when their common box is no bigger than
     * their separate boxes together (neighbours, typically); a small triangle
     * paired with a distant or large one gets a leaf of its own, or the pair's
     * box would overlap everything between them. */
    int leaf = n == 1;
    if (n == 2) {
        tdm_bvh_node one;
        leaf = surf <= fit_obb(m, ctx->idx + lo, 1, &one) + fit_obb(m, ctx->idx + lo + 1, 1, &one);
    }
    if (leaf) {
        node->link = ~(int32_t)((lo << 1) | (n - 1));
        return;
    }
    /* Split along the box's longest axis at the mean of the triangle centroids
     * (spatial: a few large triangles end up apart from many small ones). Past
     * TDM_BVH_MEAN_SPLIT_DEPTH, or when the mean leaves a side empty, split at the
     * median instead, which bounds the depth (see bvh.h). */
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (node->extent[k] > node->extent[axis]) axis = k;
    tdm_dvec3 a = tdm_d3(node->axis[axis][0], node->axis[axis][1], node->axis[axis][2]);
    double mean = 0;
    for (uint32_t i = lo; i < hi; i++) {
        const uint32_t *t = &m->tris[3 * ctx->idx[i]];
        tdm_dvec3 c = tdm_d3_add(tdm_d3_add(vert(m, t[0]), vert(m, t[1])), vert(m, t[2]));
        ctx->key[i] = tdm_d3_dot(a, c);
        mean += ctx->key[i];
    }
    mean /= n;
    uint32_t mid = lo;
    if (depth < TDM_BVH_MEAN_SPLIT_DEPTH) mid = lo + partition_below(ctx->key + lo, ctx->idx + lo, n, mean);
    if (mid == lo || mid == hi) {
        mid = lo + n / 2;
        select_kth(ctx->key + lo, ctx->idx + lo, n, n / 2);
    }
    build_children(ctx, ni, lo, mid, hi, depth);
}

/* A zero-area triangle (three collinear or coincident vertices) becomes its two
 * extreme vertices and a repeat of one: the same point set, which the triangle
 * tests then take as one segment without evaluating predicates that are zero
 * (tri.h). On a line, every coordinate along which the points spread orders them,
 * so its smallest and largest values pick the ends exactly. */
static void zero_area_as_segment(float *v)
{
    tdm_dvec3 p[3];
    for (int k = 0; k < 3; k++) p[k] = tdm_d3(v[3 * k], v[3 * k + 1], v[3 * k + 2]);
    if (!tdm_tri_degenerate(p)) return;
    int lo = 0, hi = 0;
    for (int axis = 0; axis < 3 && lo == hi; axis++)
        for (int k = 1; k < 3; k++) {
            if (v[3 * k + axis] < v[3 * lo + axis]) lo = k;
            if (v[3 * k + axis] > v[3 * hi + axis]) hi = k;
        }
    float out[9];
    memcpy(out, &v[3 * lo], 3 * sizeof(float));
    memcpy(out + 3, &v[3 * hi], 3 * sizeof(float));
    memcpy(out + 6, &v[3 * hi], 3 * sizeof(float));
    memcpy(v, out, sizeof out);
}

void tdm_bvh_zero_area_as_segments(tdm_bvh *bvh)
{
    for (uint32_t i = 0; i < bvh->n_tris; i++) zero_area_as_segment(&bvh->tri_verts[9 * (size_t)i]);
}

static int exact_extents(tdm_bvh *b, int levels);

int tdm_bvh_build(const tdm_mesh *mesh, tdm_bvh **out) { return tdm_bvh_build_threads(mesh, 1, out); }

int tdm_bvh_build_threads(const tdm_mesh *mesh, int threads, tdm_bvh **out)
{
    *out = NULL;
    if (!mesh || mesh->n_tris == 0) return TDM_EINVAL;
    if (mesh->n_tris > (1u << 30)) return TDM_ERANGE; /* leaf encoding keeps 30 bits */
    uint32_t n = mesh->n_tris, nn = 2 * n - 1; /* the most a binary tree over n leaves can need */
    int spawn = 0; /* levels that split in two: 2^spawn threads at most */
    while (spawn < 6 && (2 << spawn) <= threads) spawn++;
    build_ctx ctx = {mesh, NULL, NULL, NULL, 0, spawn};
    tdm_bvh *b = calloc(1, sizeof *b);
    if (!b) return TDM_ENOMEM;
    ctx.idx = malloc(sizeof(uint32_t) * n);
    ctx.key = malloc(sizeof(double) * n);
    size_t node_bytes = ((sizeof(tdm_bvh_node) * (size_t)nn + 63) / 64) * 64;
    b->nodes = aligned_alloc(64, node_bytes);
    b->tri_verts = malloc(sizeof(float) * 9 * (size_t)n);
    if (!ctx.idx || !ctx.key || !b->nodes || !b->tri_verts) goto fail;
    memset(b->nodes, 0, node_bytes);
    for (uint32_t i = 0; i < n; i++) ctx.idx[i] = i;
    ctx.nodes = b->nodes;
    ctx.n_nodes = 1;
    build_node(&ctx, 0, 0, n, 1);
    b->n_nodes = ctx.n_nodes;
    /* past the tree, zeros, as one thread leaves them (threads leave copies of moved subtrees) */
    memset(&b->nodes[b->n_nodes], 0, sizeof *b->nodes * (nn - b->n_nodes));
    b->n_tris = n;
    for (uint32_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            memcpy(&b->tri_verts[9 * i + 3 * c], &mesh->verts[3 * mesh->tris[3 * ctx.idx[i] + c]], 3 * sizeof(float));
    tdm_bvh_zero_area_as_segments(b);
    b->tri_ids = ctx.idx;
    b->radius = tdm_mesh_radius(mesh);
    free(ctx.key);
    ctx.key = NULL;
    if (exact_extents(b, spawn) != TDM_OK) {
        tdm_bvh_free(b); /* owns idx now */
        return TDM_ENOMEM;
    }
    *out = b;
    return TDM_OK;
fail:
    free(ctx.idx);
    free(ctx.key);
    tdm_bvh_free(b);
    return TDM_ENOMEM;
}

/* The extents of node root's subtree: a depth-first walk keeps the path from the root (its first
 * d0 places the nodes above root, prefix); each leaf's vertices are measured against every node on
 * it, into ext, or for the d0 nodes above root into top (3 floats each, the caller's to merge).
 * The stored blob is checked to be a tree of at most TDM_BVH_MAX_DEPTH levels, which bounds the
 * path. */
static void extents_walk(const tdm_bvh *b, float *ext, uint32_t root, const uint32_t *prefix, uint32_t d0, float *top)
{
    uint32_t path[TDM_BVH_MAX_DEPTH + 1], todo[TDM_BVH_MAX_DEPTH + 2], todo_depth[TDM_BVH_MAX_DEPTH + 2];
    for (uint32_t d = 0; d < d0; d++) path[d] = prefix[d];
    int sp = 0;
    todo[sp] = root;
    todo_depth[sp++] = d0;
    while (sp > 0) {
        sp--;
        uint32_t i = todo[sp], depth = todo_depth[sp];
        const tdm_bvh_node *n = &b->nodes[i];
        path[depth] = i;
        if (!tdm_node_is_leaf(n)) {
            todo[sp] = (uint32_t)n->link;
            todo_depth[sp++] = depth + 1;
            todo[sp] = i + 1;
            todo_depth[sp++] = depth + 1;
            continue;
        }
        uint32_t first = tdm_leaf_first(n), count = tdm_leaf_count(n);
        for (uint32_t d = 0; d <= depth; d++) {
            const tdm_bvh_node *a = &b->nodes[path[d]];
            double ax[3][3], c[3] = {a->center[0], a->center[1], a->center[2]}, m[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < 3; j++) ax[k][j] = a->axis[k][j];
            for (uint32_t t = first; t < first + count; t++)
                for (int v = 0; v < 3; v++) {
                    const float *p = &b->tri_verts[9 * (size_t)t + 3 * v];
                    double q[3] = {(double)p[0] - c[0], (double)p[1] - c[1], (double)p[2] - c[2]};
                    for (int k = 0; k < 3; k++) {
                        double s = fabs(ax[k][0] * q[0] + ax[k][1] * q[1] + ax[k][2] * q[2]);
                        m[k] = s > m[k] ? s : m[k];
                    }
                }
            /* rounding up is monotone: the rounded maximum is the maximum of the rounded (and so
               the order in which leaves, and threads, come does not matter) */
            for (int k = 0; k < 3; k++) {
                float e = tdm_float_up(m[k]), *dst = d < d0 ? &top[3 * d + k] : &ext[3 * (size_t)path[d] + k];
                if (e > *dst) *dst = e;
            }
        }
    }
}

/* A subtree of the top levels' split, walked on a thread of its own (extents_threads). */
typedef struct extents_part {
    const tdm_bvh *b;
    float *ext;
    uint32_t root, d0;
    uint32_t prefix[8];
    float top[3 * 8];
    pthread_t th;
    int threaded;
} extents_part;

static void *extents_main(void *arg)
{
    extents_part *e = arg;
    extents_walk(e->b, e->ext, e->root, e->prefix, e->d0, e->top);
    return NULL;
}

/* The parts below node i (at depth d, the nodes above it in prefix): the subtrees at depth
 * `levels`, or the leaves above it, into parts[*n..]. */
static void extents_parts(const tdm_bvh *b, float *ext, uint32_t i, uint32_t d, int levels, uint32_t prefix[8],
                          extents_part *parts, int *n)
{
    const tdm_bvh_node *node = &b->nodes[i];
    if (tdm_node_is_leaf(node) || (int)d == levels) {
        extents_part *e = &parts[(*n)++];
        e->b = b, e->ext = ext, e->root = i, e->d0 = d;
        memcpy(e->prefix, prefix, sizeof e->prefix);
        return;
    }
    prefix[d] = i;
    extents_parts(b, ext, (uint32_t)node->link, d + 1, levels, prefix, parts, n);
    extents_parts(b, ext, i + 1, d + 1, levels, prefix, parts, n);
}

/* The extents with the tree's top `levels` levels (at most 6) split: each subtree below them (or a
 * leaf above) walked on a thread of its own, the nodes above them merged after. */
static int extents_threads(tdm_bvh *b, int levels, float *ext)
{
    int n = 0;
    extents_part *parts = calloc((size_t)1 << levels, sizeof *parts);
    if (!parts) return TDM_ENOMEM;
    uint32_t prefix[8] = {0};
    extents_parts(b, ext, 0, 0, levels, prefix, parts, &n);
    for (int k = 0; k < n; k++) parts[k].threaded = pthread_create(&parts[k].th, NULL, extents_main, &parts[k]) == 0;
    for (int k = 0; k < n; k++) {
        if (parts[k].threaded) pthread_join(parts[k].th, NULL);
        else extents_main(&parts[k]); /* no thread: here */
    }
    for (int k = 0; k < n; k++)
        for (uint32_t d = 0; d < parts[k].d0; d++)
            for (int c = 0; c < 3; c++) {
                float e = parts[k].top[3 * d + c], *dst = &ext[3 * (size_t)parts[k].prefix[d] + c];
                if (e > *dst) *dst = e;
            }
    free(parts);
    return TDM_OK;
}

static int exact_extents(tdm_bvh *b, int levels)
{
    float *ext = calloc(3 * (size_t)b->n_nodes, sizeof(float));
    if (!ext) return TDM_ENOMEM;
    if (levels > 0 && b->n_tris >= SPAWN_MIN_TRIS) {
        if (extents_threads(b, levels, ext) != TDM_OK) {
            free(ext);
            return TDM_ENOMEM;
        }
    } else {
        extents_walk(b, ext, 0, NULL, 0, NULL);
    }
    free(b->exact_extent);
    b->exact_extent = ext;
    return TDM_OK;
}

int tdm_bvh_exact_extents(tdm_bvh *b) { return exact_extents(b, 0); }

void tdm_bvh_free(tdm_bvh *bvh)
{
    if (!bvh) return;
    free(bvh->exact_extent);
    free(bvh->reps);
    free(bvh->nodes);
    free(bvh->tri_verts);
    free(bvh->tri_ids);
    free(bvh);
}
