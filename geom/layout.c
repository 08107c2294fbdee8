/* The GPU-resident engine's node layouts; layout.h states what they hold. */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

int tdm_layout_blocked(const tdm_bvh *bvh, tdm_bvh_node **out, uint32_t *count)
{
    *out = NULL;
    *count = 0;
    uint32_t n = bvh->n_nodes;
    if (n == 0) return TDM_EEMPTY;
    size_t total = TDM_LAYOUT_BLOCKED_NODES((size_t)n);
    tdm_bvh_node *nodes = calloc(total, sizeof *nodes);
    uint32_t *order = malloc(total * sizeof *order); /* new index -> the tree's index */
    if (!nodes || !order) {
        free(nodes);
        free(order);
        return TDM_ENOMEM;
    }
    /* a queue in `order` itself: node k's children are appended when k is placed */
    uint32_t tail = 2;
    order[0] = 0;
    for (uint32_t k = 0; k < tail; k++) {
        if (k == 1) continue; /* the unused slot */
        tdm_bvh_node nd = bvh->nodes[order[k]];
        if (!tdm_node_is_leaf(&nd) && tail + 2 <= total) { /* always room in a valid tree */
            order[tail] = order[k] + 1;          /* left child: next in depth-first order */
            order[tail + 1] = (uint32_t)nd.link; /* right child */
            nd.link = (int32_t)tail;
            tail += 2;
        }
        nodes[k] = nd;
    }
    free(order);
    *out = nodes;
    *count = (uint32_t)total;
    return TDM_OK;
}

int tdm_layout_wide(const tdm_bvh *bvh, tdm_bvh_node **out, uint32_t *count)
{
    *out = NULL;
    *count = 0;
    uint32_t n = bvh->n_nodes;
    if (n == 0) return TDM_EEMPTY;
    /* the root's block, and at most one block per node of the tree */
    size_t cap = 4 + 4 * (size_t)n;
    tdm_bvh_node *nodes = calloc(cap, sizeof *nodes);
    uint32_t *from = malloc(cap * sizeof *from); /* new index -> the tree's index, or NONE */
    const uint32_t NONE = UINT32_MAX;
    if (!nodes || !from) {
        free(nodes);
        free(from);
        return TDM_ENOMEM;
    }
    tdm_bvh_node imaginary;
    memset(&imaginary, 0, sizeof imaginary);
    imaginary.extent[0] = imaginary.extent[1] = imaginary.extent[2] = -1.0f;
    imaginary.link = -1;
    nodes[0] = bvh->nodes[0];
    from[0] = 0;
    for (int k = 1; k < 4; k++) {
        nodes[k] = imaginary;
        from[k] = NONE;
    }
    /* breadth first over the blocks: node k's block is appended when k is reached */
    size_t tail = 4;
    for (size_t k = 0; k < tail; k++) {
        if (from[k] == NONE || tdm_node_is_leaf(&nodes[k])) continue;
        uint32_t b = from[k], child[2] = {b + 1, (uint32_t)bvh->nodes[b].link};
        size_t block = tail;
        tail += 4;
        nodes[k].link = (int32_t)block;
        for (int c = 0; c < 2; c++) {
            const tdm_bvh_node *cn = &bvh->nodes[child[c]];
            uint32_t g[2] = {child[c], NONE};
            if (!tdm_node_is_leaf(cn)) {
                g[0] = child[c] + 1;
                g[1] = (uint32_t)cn->link;
            }
            for (int i = 0; i < 2; i++) {
                nodes[block + 2 * c + i] = g[i] == NONE ? imaginary : bvh->nodes[g[i]];
                from[block + 2 * c + i] = g[i];
            }
        }
    }
    free(from);
    *out = nodes;
    *count = (uint32_t)tail;
    return TDM_OK;
}
