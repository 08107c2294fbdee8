/* Harness: tandemd's request path, end to end in process (daemon_fixture.h):
 * bytes on a client connection → the connection's framing (conn.c: 4-byte
 * lengths, their limits, frames cut anywhere, pipelined frames, large frames
 * in their own buffer, EOF inside a frame) → tdm_decode_request (codec.c) →
 * the gates (Hello first) → every request type's handler and validation
 * against a catalogue holding the fixture (one mesh, one rigid scene, one robot,
 * one robot scene) → the writer thread (mesh validation, trees, files), the
 * query pool and the CPU engine → replies. After each input the catalogue is
 * put back to the fixture, so inputs do not depend on each other.
 *
 * Input: two header bytes, then the bytes the client sends.
 *   byte 0: bit 0 set: a valid Hello frame is sent first (most seeds: the
 *           fuzzer then spends its time past the gate); bit 1 set: then a
 *           MeshPut of ~74 KB (4096 vertices, 4096 triangles: at the limits),
 *           larger than the connection's 64 KiB staging buffer, so that it
 *           takes the large-frame path (its own buffer, grown as bytes come),
 *           written in 4 KiB pieces at least;
 *   byte 1: bytes per write (1..255; 0: all at once), the loop running between
 *           writes. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz/daemon_fixture.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fuzz_daemon d;
static fuzz_bytes large; /* the large MeshPut frame */

static void make_large(void)
{
    enum { N = 64 };
    static float v[3 * N * N];
    static uint32_t t[3 * 4096];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float *p = &v[3 * (i * N + j)];
            p[0] = (float)i * 0.01f;
            p[1] = (float)j * 0.01f;
            p[2] = (float)((i + j) % 5) * 0.001f;
        }
    size_t n = 0;
    for (int i = 0; i + 1 < N && n < 4096; i++)
        for (int j = 0; j + 1 < N && n < 4096; j++, n++) {
            uint32_t a = (uint32_t)(i * N + j);
            t[3 * n] = a;
            t[3 * n + 1] = a + 1;
            t[3 * n + 2] = a + N;
        }
    fuzz_req_mesh_put(&large, 0x4c, "large", v, 3 * N * N, t, 3 * n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_daemon_start(&d);
    make_large();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    fuzz_bytes in = {0};
    size_t chunk = data[1];
    if (data[0] & 1) fuzz_req_hello(&in, 0x4845);
    if (data[0] & 2) {
        fuzz_bytes_append(&in, large.data, large.len);
        if (chunk) chunk *= 4096;
    }
    fuzz_bytes_append(&in, data + 2, size - 2);
    fuzz_daemon_session(&d, in.data, in.len, chunk, NULL);
    fuzz_bytes_free(&in);
    fuzz_daemon_restore(&d);
    return 0;
}
