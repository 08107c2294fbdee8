/* tandemd in process, for the harnesses and the seed generator: the real
 * server (config, CPU engine, data directory in a temporary folder, catalogue,
 * writer thread, query pool, a Unix listener) driven from the calling thread,
 * which is its loop thread between calls. Clients are real sockets: a session
 * connects, writes its bytes (in chunks, the loop running between them, so
 * frames arrive cut anywhere), half-closes and reads every reply until the
 * server has closed and freed the connection.
 *
 * The fixture (fixture.h) is stored once: the mesh arm.stl, a rigid scene of two
 * objects (1 fixed, 2 movable) on it, the robot and its robot scene. restore
 * puts the catalogue back to exactly that after a session that changed it. */
#ifndef TDM_FUZZ_DAEMON_FIXTURE_H
#define TDM_FUZZ_DAEMON_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/server.h"

typedef struct fuzz_bytes {
    uint8_t *data;
    size_t len, cap;
} fuzz_bytes;

void fuzz_bytes_append(fuzz_bytes *b, const void *p, size_t n);
void fuzz_bytes_free(fuzz_bytes *b);
/* Appends one frame: the request packed, after its 4-byte big-endian length. */
void fuzz_frame_append(fuzz_bytes *b, const Tandem__V1__Request *r);

typedef struct fuzz_daemon {
    uv_loop_t loop;
    tdm_config cfg;
    tdm_server srv;
    char dir[256];
    char sock[320];
    /* the fixture's ids */
    uint8_t mesh_id[TDM_ID_LEN], scene_id[TDM_ID_LEN], robot_id[TDM_ID_LEN], rscene_id[TDM_ID_LEN];
} fuzz_daemon;

/* Starts the server in a new temporary folder (removed at exit) and stores the
 * fixture. Aborts on failure. */
void fuzz_daemon_start(fuzz_daemon *d);
/* One connection: see above. chunk: bytes per write (0: all at once). Replies
 * are appended to *out when not NULL. */
void fuzz_daemon_session(fuzz_daemon *d, const uint8_t *in, size_t len, size_t chunk, fuzz_bytes *out);
/* Deletes whatever is not the fixture and puts back what of it is missing. */
void fuzz_daemon_restore(fuzz_daemon *d);

/* Requests of the fixture, for seeds (appended as frames, ids from 1 up). */
void fuzz_req_hello(fuzz_bytes *b, uint64_t id);
void fuzz_req_mesh_put(fuzz_bytes *b, uint64_t id, const char *name, const float *v, size_t nv, const uint32_t *t,
                       size_t nt);
void fuzz_req_scene_put(fuzz_bytes *b, uint64_t id, const uint8_t mesh_id[TDM_ID_LEN], int with_allowed);
void fuzz_req_robot_put(fuzz_bytes *b, uint64_t id, const uint8_t mesh_id[TDM_ID_LEN]);
void fuzz_req_robot_scene_put(fuzz_bytes *b, uint64_t id, const uint8_t robot_id[TDM_ID_LEN], const char *yaml);
void fuzz_req_id(fuzz_bytes *b, uint64_t id, int body, const uint8_t *oid); /* lists, deletes, stats */
void fuzz_req_query(fuzz_bytes *b, uint64_t id, const uint8_t scene_id[TDM_ID_LEN], int contacts, const double *poses,
                    size_t n_poses, const double *configs, size_t n_configs, uint32_t max_contacts, int want_pairs);
void fuzz_req_motion(fuzz_bytes *b, uint64_t id, const uint8_t scene_id[TDM_ID_LEN], double resolution,
                     const double *motions, size_t n, const uint32_t *points, size_t n_points, int any_state);

#endif
