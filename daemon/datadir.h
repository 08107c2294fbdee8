/* The data directory: the on-disk format of meshes and scenes, and the
 * synchronous calls that write, remove and read its files.
 *
 *   DIR/LOCK                   flock'd while a tandemd uses DIR
 *   DIR/meshes/<hex id>.mesh
 *   DIR/scenes/<hex id>.scene
 *   DIR/robots/<hex id>.robot
 *   DIR/robot-scenes/<hex id>.rscene
 *   DIR/owners/<hex id>.owners  the owner record of the object with that id (owners.h),
 *                              when it is not the default tenant's alone
 *
 * Every file is a 64-byte header then a payload:
 *
 *   offset size
 *   0      8    magic "TDMMESH\0", "TDMSCENE", "TDMROBOT", "TDMRSCN\0" or "TDMOWNRS"
 *   8      4    format version (1), little-endian like every integer here
 *   12     4    zero
 *   16     8    payload length
 *   24     8    zero
 *   32     32   SHA-256 of bytes [0, 32) followed by the payload
 *   64     ...  payload: name length (u32), zero (u32), canonical length (u64),
 *               tree blob length (u64; 0 but for meshes), then the name (UTF-8), the
 *               canonical content (content_id.h: the id is its SHA-256) and, for
 *               meshes, the tree blob of tdm_bvh_serialize.
 *
 * A file is written to a temporary name, fsync'd, renamed into place and the
 * directory fsync'd: only then is the request acknowledged. An owner record's
 * payload has an empty name and its record (owners.h) as the canonical part; its
 * id is its object's, not a hash of the record. A new object's record is written
 * (or a stale one removed) before the object's file, and removed after it: a crash
 * in between leaves a record without an object, never an object whose owners are
 * lost (loader.c removes such records at start-up). A crash leaves
 * either the old state or the new one (and perhaps a .tmp- file, removed at the
 * next start).
 *
 * Writes and removals are ordered by the writer thread (writer.h; a large mesh's file is
 * staged and a removed mesh's file unlinked on its builder thread, the renames that
 * make them visible on the writer); reading runs at start-up (loader.h). Every function
 * is synchronous. */
#ifndef TDM_DAEMON_DATADIR_H
#define TDM_DAEMON_DATADIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "content_id.h"

#define TDM_DATADIR_VERSION 1u

typedef enum tdm_datadir_kind {
    TDM_DATADIR_MESH = 0,
    TDM_DATADIR_SCENE = 1,
    TDM_DATADIR_ROBOT = 2,
    TDM_DATADIR_ROBOT_SCENE = 3,
    TDM_DATADIR_OWNERS = 4
} tdm_datadir_kind;

typedef struct tdm_datadir tdm_datadir;

/* Creates DIR, DIR/meshes and DIR/scenes as needed, takes the lock (failing if
 * another process holds it) and removes leftover temporary files. Returns 0, or
 * TDM_EIO / TDM_ENOMEM with a message in err. */
int tdm_datadir_open(const char *dir, tdm_datadir **out, char *err, size_t errlen);
void tdm_datadir_close(tdm_datadir *p);

/* Durably stores a file. `parts` are the canonical content's pieces, in order;
 * `blob` may be NULL (scenes). Returns 0, or TDM_EIO / TDM_ENOMEM with a
 * message in err (nothing was stored: the temporary file is removed). */
int tdm_datadir_write(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN], const char *name,
                      const struct iovec *parts, int n_parts, const void *blob, size_t blob_len, char *err,
                      size_t errlen);
/* A file written under a temporary name and fsync'd, not yet in place (tdm_datadir_stage), or one
 * taken out of its place and not yet unlinked (tdm_datadir_remove_aside). */
typedef struct tdm_datadir_staged {
    int kind;
    int staged; /* the temporary file exists */
    char final[128], tmp[176];
} tdm_datadir_staged;

/* tdm_datadir_write in two steps, so that a large file's writing and fsync can run on another thread
 * than the one that orders the directory's changes: stage writes the temporary file (any thread;
 * TDM_EIO / TDM_ENOMEM with nothing left), commit renames it into place and fsyncs the directory (the
 * writer, in order; on failure the temporary file is removed), unstage drops a staged file that is
 * not to be committed. A crash between them leaves a .tmp- file, removed at the next start. */
int tdm_datadir_stage(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN], const char *name,
                      const struct iovec *parts, int n_parts, const void *blob, size_t blob_len,
                      tdm_datadir_staged *out, char *err, size_t errlen);
int tdm_datadir_commit(tdm_datadir *p, tdm_datadir_staged *s, char *err, size_t errlen);
void tdm_datadir_unstage(tdm_datadir *p, tdm_datadir_staged *s);
/* Durably removes a file by renaming it aside (a .tmp- name) and fsyncing the directory, leaving the
 * unlink, which for a large file frees its blocks and takes a while, to tdm_datadir_unstage(aside) on
 * any thread later. A missing file counts as removed (aside->staged 0). 0 or TDM_EIO. */
int tdm_datadir_remove_aside(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN],
                             tdm_datadir_staged *aside, char *err, size_t errlen);
/* Durably removes a file; a missing file counts as removed (and costs no fsync). 0 or TDM_EIO. */
int tdm_datadir_remove(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN], char *err, size_t errlen);
/* 1 when the file of this kind and id exists, else 0. Any thread. */
int tdm_datadir_exists(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN]);

/* A stored file, checked: header, checksum, lengths, and id == SHA-256 of the
 * canonical content (but for owner records). The pointers are into a buffer valid during the callback. */
typedef struct tdm_datadir_item {
    uint8_t id[TDM_ID_LEN];
    const char *name;    /* zero-terminated copy */
    const uint8_t *canon;
    size_t canon_len;
    const uint8_t *blob; /* meshes */
    size_t blob_len;
    const char *path;
} tdm_datadir_item;

/* Calls cb for every good file of a kind; cb returns 0, or -1 when it rejects
 * the item (after logging why). A file that cannot be read or fails a check is
 * logged and skipped. Returns the number of files skipped or rejected. */
size_t tdm_datadir_load(tdm_datadir *p, tdm_datadir_kind kind, int (*cb)(void *ctx, const tdm_datadir_item *it),
                        void *ctx);

/* Reads and checks the one file of this kind and id, as tdm_datadir_load does, and
 * calls cb with it. Returns cb's result, or -1 after logging why the file is bad
 * or missing. Any thread (reads only). */
int tdm_datadir_read(tdm_datadir *p, tdm_datadir_kind kind, const uint8_t id[TDM_ID_LEN],
                     int (*cb)(void *ctx, const tdm_datadir_item *it), void *ctx);

#endif

