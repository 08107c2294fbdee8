/* BVH blobs: a fixed little-endian header, then the three arrays verbatim.
 *
 *   offset size
 *   0      8    magic "TDMBVH\0\0"
 *   8      4    version (TDM_BVH_BLOB_VERSION)
 *   12     4    n_nodes
 *   16     4    n_tris
 *   20     4    radius (float)
 *   24     8    payload length in bytes
 *   32     32   SHA-256 of bytes [0, 32) followed by the payload
 *   64     ...  payload: nodes (64 bytes each), triangle coordinates (36 bytes
 *               each), triangle ids (4 bytes each)
 *
 * The header is 64 bytes so that the node array of a blob that is itself 64-byte
 * aligned stays aligned (the GPU upload copies it as it is). */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bvh.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "BVH blobs are little-endian; this build assumes a little-endian host"
#endif

_Static_assert(sizeof(tdm_bvh_node) == 64, "tdm_bvh_node must stay 64 bytes: it is the blob's record");

#define HEADER_LEN 64
static const char MAGIC[8] = {'T', 'D', 'M', 'B', 'V', 'H', 0, 0};

static int sha256_two(const void *a, size_t alen, const void *b, size_t blen, unsigned char out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, a, alen) &&
             EVP_DigestUpdate(ctx, b, blen) && EVP_DigestFinal_ex(ctx, out, &n) && n == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? TDM_OK : TDM_ENOMEM;
}

static uint64_t payload_len(uint32_t n_nodes, uint32_t n_tris)
{
    return (uint64_t)n_nodes * sizeof(tdm_bvh_node) + (uint64_t)n_tris * (9 * sizeof(float) + sizeof(uint32_t));
}

int tdm_bvh_serialize(const tdm_bvh *bvh, void **blob, size_t *len)
{
    *blob = NULL;
    *len = 0;
    uint64_t plen = payload_len(bvh->n_nodes, bvh->n_tris);
    unsigned char *b = aligned_alloc(64, (HEADER_LEN + plen + 63) / 64 * 64);
    if (!b) return TDM_ENOMEM;
    memset(b, 0, HEADER_LEN);
    memcpy(b, MAGIC, 8);
    uint32_t version = TDM_BVH_BLOB_VERSION;
    memcpy(b + 8, &version, 4);
    memcpy(b + 12, &bvh->n_nodes, 4);
    memcpy(b + 16, &bvh->n_tris, 4);
    memcpy(b + 20, &bvh->radius, 4);
    memcpy(b + 24, &plen, 8);
    unsigned char *p = b + HEADER_LEN;
    size_t nb = (size_t)bvh->n_nodes * sizeof(tdm_bvh_node), vb = (size_t)bvh->n_tris * 9 * sizeof(float);
    memcpy(p, bvh->nodes, nb);
    memcpy(p + nb, bvh->tri_verts, vb);
    memcpy(p + nb + vb, bvh->tri_ids, (size_t)bvh->n_tris * sizeof(uint32_t));
    if (sha256_two(b, 32, p, plen, b + 32) != TDM_OK) {
        free(b);
        return TDM_ENOMEM;
    }
    *blob = b;
    *len = HEADER_LEN + plen;
    return TDM_OK;
}

/* The tree must be exactly the preorder layout: node i's left subtree is
 * [i + 1, link), its right subtree [link, end of i's range), leaves' triangles in
 * range, no deeper than TDM_BVH_MAX_DEPTH, and every node reached once. */
static int check_tree(const tdm_bvh *b)
{
    struct { uint32_t node, end, depth; } stack[TDM_BVH_MAX_DEPTH + 1];
    int sp = 0;
    stack[sp].node = 0;
    stack[sp].end = b->n_nodes;
    stack[sp].depth = 1;
    sp++;
    while (sp > 0) {
        sp--;
        uint32_t i = stack[sp].node, end = stack[sp].end, depth = stack[sp].depth;
        if (i >= end || depth > TDM_BVH_MAX_DEPTH) return TDM_ECORRUPT;
        const tdm_bvh_node *n = &b->nodes[i];
        for (int k = 0; k < 3; k++) {
            if (!isfinite(n->center[k]) || !(n->extent[k] >= 0) || !isfinite(n->extent[k])) return TDM_ECORRUPT;
            for (int j = 0; j < 3; j++)
                if (!isfinite(n->axis[k][j])) return TDM_ECORRUPT;
        }
        if (tdm_node_is_leaf(n)) {
            if (end != i + 1) return TDM_ECORRUPT;
            uint64_t first = tdm_leaf_first(n), count = tdm_leaf_count(n);
            if (first + count > b->n_tris) return TDM_ECORRUPT;
            continue;
        }
        uint32_t right = (uint32_t)n->link;
        if (right <= i + 1 || right >= end) return TDM_ECORRUPT;
        if (sp + 2 > TDM_BVH_MAX_DEPTH + 1) return TDM_ECORRUPT;
        stack[sp].node = right;
        stack[sp].end = end;
        stack[sp].depth = depth + 1;
        sp++;
        stack[sp].node = i + 1;
        stack[sp].end = right;
        stack[sp].depth = depth + 1;
        sp++;
    }
    return TDM_OK;
}

int tdm_bvh_deserialize(const void *blob, size_t len, tdm_bvh **out)
{
    *out = NULL;
    const unsigned char *h = blob;
    if (!blob || len < HEADER_LEN || memcmp(h, MAGIC, 8) != 0) return TDM_ECORRUPT;
    uint32_t version, n_nodes, n_tris;
    uint64_t plen;
    float radius;
    memcpy(&version, h + 8, 4);
    memcpy(&n_nodes, h + 12, 4);
    memcpy(&n_tris, h + 16, 4);
    memcpy(&radius, h + 20, 4);
    memcpy(&plen, h + 24, 8);
    if (version != TDM_BVH_BLOB_VERSION) return TDM_EVERSION;
    if (n_nodes == 0 || n_tris == 0 || n_tris > (1u << 30) || plen != payload_len(n_nodes, n_tris) ||
        plen != len - HEADER_LEN || !isfinite(radius) || !(radius >= 0))
        return TDM_ECORRUPT;
    unsigned char sum[32];
    if (sha256_two(h, 32, h + HEADER_LEN, plen, sum) != TDM_OK) return TDM_ENOMEM;
    if (memcmp(sum, h + 32, 32) != 0) return TDM_ECORRUPT;

    tdm_bvh *b = calloc(1, sizeof *b);
    if (!b) return TDM_ENOMEM;
    size_t nb = (size_t)n_nodes * sizeof(tdm_bvh_node), vb = (size_t)n_tris * 9 * sizeof(float);
    b->nodes = aligned_alloc(64, nb); /* nb is a multiple of 64 */
    b->tri_verts = malloc(vb);
    b->tri_ids = malloc((size_t)n_tris * sizeof(uint32_t));
    if (!b->nodes || !b->tri_verts || !b->tri_ids) {
        tdm_bvh_free(b);
        return TDM_ENOMEM;
    }
    const unsigned char *p = h + HEADER_LEN;
    memcpy(b->nodes, p, nb);
    memcpy(b->tri_verts, p + nb, vb);
    memcpy(b->tri_ids, p + nb + vb, (size_t)n_tris * sizeof(uint32_t));
    b->n_nodes = n_nodes;
    b->n_tris = n_tris;
    b->radius = radius;
    int rc = check_tree(b);
    /* the radius bounds every vertex: the box tests' slack and tdm_bounds_apart (bv.h) rely on it */
    for (uint32_t i = 0; rc == TDM_OK && i < 9 * n_tris; i++)
        if (!isfinite(b->tri_verts[i]) || !(fabsf(b->tri_verts[i]) <= radius)) rc = TDM_ECORRUPT;
    for (uint32_t i = 0; rc == TDM_OK && i < n_tris; i++)
        if (b->tri_ids[i] >= n_tris) rc = TDM_ECORRUPT;
    if (rc != TDM_OK) {
        tdm_bvh_free(b);
        return rc;
    }
    tdm_bvh_zero_area_as_segments(b); /* blobs written before builds did it */
    if (tdm_bvh_exact_extents(b) != TDM_OK) {
        tdm_bvh_free(b);
        return TDM_ENOMEM;
    }
    *out = b;
    return TDM_OK;
}
