/* Harness: the data directory's file loaders (daemon/datadir.c reading a file
 * back and checking it, daemon/loader.c turning it into a catalogue entry: the
 * canonical mesh and its tree blob, a scene naming stored meshes, a robot's
 * URDF, SRDF and mesh table, a robot scene's YAML), as tandemd runs them at
 * start-up on whatever a crash, a full disk or a hand left in the directory.
 *
 * The directory holds the fixture's files as the writer wrote them
 * (daemon_fixture.h: a mesh, a scene, a robot), so that a fuzzed
 * scene or robot scene can name stored meshes and robots. Each input adds one
 * file, the whole directory is loaded into a new catalogue, and the file goes.
 *
 * Input: one flag byte, then the file.
 *   bits 0-1: the kind (mesh, scene, robot, robot scene);
 *   bit 2 clear: the input is the payload; the harness writes the 64-byte
 *     header (magic, version, payload length, checksum) and names the file by
 *     the SHA-256 of the canonical content when the payload's lengths hold
 *     together (else of the whole payload), so that the fuzzer gets past the
 *     checksum and the id check to what they guard;
 *   bit 2 set: the input is the whole file, as it is. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/loader.h"
#include "fuzz/daemon_fixture.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fuzz_daemon d;
static const char *const MAGIC[4] = {"TDMMESH\0", "TDMSCENE", "TDMROBOT", "TDMRSCN\0"};
static const char *const SUBDIR[4] = {"meshes", "scenes", "robots", "robot-scenes"};
static const char *const SUFFIX[4] = {".mesh", ".scene", ".robot", ".rscene"};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_daemon_start(&d);
    /* the fixture's robot scene file goes: rebuilding it (tessellation, trees) for every input
     * would cost most of the run; fuzzed robot scenes still find the robot they name */
    char path[512], hex[2 * TDM_ID_LEN + 1];
    tdm_id_hex(d.rscene_id, hex);
    snprintf(path, sizeof path, "%s/robot-scenes/%s.rscene", d.cfg.data_dir, hex);
    if (unlink(path) != 0) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int kind = data[0] & 3, raw = data[0] & 4;
    data++;
    size--;
    uint8_t id[TDM_ID_LEN];
    uint8_t *file;
    size_t flen;
    if (raw) {
        flen = size;
        file = malloc(flen ? flen : 1);
        if (!file) return 0;
        if (size) memcpy(file, data, size);
        tdm_sha256(data, size, id);
    } else {
        flen = 64 + size;
        file = calloc(1, flen);
        if (!file) return 0;
        memcpy(file, MAGIC[kind], 8);
        uint32_t version = TDM_DATADIR_VERSION;
        uint64_t plen = size;
        memcpy(file + 8, &version, 4);
        memcpy(file + 16, &plen, 8);
        if (size) memcpy(file + 64, data, size);
        fuzz_sha256_two(file, 32, file + 64, size, file + 32);
        uint32_t name_len;
        uint64_t canon_len, blob_len;
        if (size >= 24) {
            memcpy(&name_len, data, 4);
            memcpy(&canon_len, data + 8, 8);
            memcpy(&blob_len, data + 16, 8);
        }
        if (size >= 24 && canon_len <= size && name_len <= size && 24 + name_len + canon_len <= size)
            tdm_sha256(data + 24 + name_len, (size_t)canon_len, id);
        else
            tdm_sha256(data, size, id);
    }
    char hex[2 * TDM_ID_LEN + 1], path[512];
    tdm_id_hex(id, hex);
    snprintf(path, sizeof path, "%s/%s/%s%s", d.cfg.data_dir, SUBDIR[kind], hex, SUFFIX[kind]);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); /* never over a fixture file */
    if (fd >= 0) {
        int ok = write(fd, file, flen) == (ssize_t)flen;
        close(fd);
        if (ok) {
            tdm_server s = d.srv; /* the fixture's config, engine and directory; a catalogue of its own */
            s.catalog = tdm_catalog_new();
            if (s.catalog) {
                tdm_loader_run(&s);
                tdm_catalog_free(s.catalog);
            }
        }
        unlink(path);
    }
    free(file);
    return 0;
}
