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
 *           fuzzer then spends its time past the gate);
 *   byte 1: bytes per write (1..255; 0: all at once), the loop running between
 *           writes. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz/daemon_fixture.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fuzz_daemon d;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_daemon_start(&d);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    fuzz_bytes in = {0};
    if (data[0] & 1) fuzz_req_hello(&in, 0x4845);
    fuzz_bytes_append(&in, data + 2, size - 2);
    fuzz_daemon_session(&d, in.data, in.len, data[1], NULL);
    fuzz_bytes_free(&in);
    fuzz_daemon_restore(&d);
    return 0;
}
