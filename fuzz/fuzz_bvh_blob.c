/* Harness: the tree blob loader (geom/bvh_blob.c, tdm_bvh_deserialize), which
 * reads the tree back from every stored mesh file at start-up.
 *
 * Input: one flag byte, then the blob. Flag bit 0 set: the harness makes the
 * header agree with the bytes (magic, version, n_tris from the length and
 * n_nodes, payload length, checksum) so that the fuzzer reaches the tree's
 * structure checks, which a random checksum would hide; clear: the bytes as
 * they are (header checks). A blob that loads is then traversed against itself
 * (tdm_collide, both modes): what passes the checks must be safe to use. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "geom/bvh.h"
#include "workpile/cpu_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int fix = data[0] & 1;
    data++;
    size--;
    uint8_t *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    if (fix && size >= 64) {
        uint32_t n_nodes, n_tris, version = TDM_BVH_BLOB_VERSION;
        memcpy(&n_nodes, b + 12, 4);
        n_nodes %= 4096;
        if (n_nodes == 0) n_nodes = 1;
        uint64_t plen = size - 64, nb = (uint64_t)n_nodes * 64;
        n_tris = plen > nb ? (uint32_t)((plen - nb) / 40) : 0;
        size = 64 + nb + (uint64_t)n_tris * 40; /* may exceed the input: then it stays unfixed */
        if (size <= 64 + plen) {
            plen = size - 64;
            memcpy(b, "TDMBVH\0\0", 8);
            memcpy(b + 8, &version, 4);
            memcpy(b + 12, &n_nodes, 4);
            memcpy(b + 16, &n_tris, 4);
            memcpy(b + 24, &plen, 8);
            fuzz_sha256_two(b, 32, b + 64, plen, b + 32);
        } else {
            size = 64 + plen;
        }
    }
    tdm_bvh *bvh = NULL;
    if (tdm_bvh_deserialize(b, size, &bvh) == TDM_OK) {
        tdm_pair pairs[8];
        tdm_task t = {.a = bvh, .b = bvh, .b_in_a = tdm_xform_identity(), .mode = TDM_MODE_BOOL, .max_pairs = 8};
        tdm_collide_result r;
        tdm_collide(&t, &r);
        t.mode = TDM_MODE_CONTACTS;
        t.pairs = pairs;
        tdm_collide(&t, &r);
        tdm_bvh_free(bvh);
    }
    free(b);
    return 0;
}
