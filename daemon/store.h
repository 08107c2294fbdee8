/* The in-memory store: meshes (with their trees) and scenes, by id.
 *
 * Loop thread only, apart from what a query job or storage op reads through a
 * reference it holds (a scene's tdm_scene and the meshes' trees, which never
 * change). Lifetimes are reference counts, so that deleting a mesh or scene from
 * the store never frees what an in-flight query still reads:
 *
 *   mesh.refs   the store's (while stored), one per scene using it, one per
 *               storage op holding it. Freed at 0.
 *   mesh.scenes scenes, stored or being stored, that use the mesh: MeshDelete
 *               refuses while it is > 0. A scene gives its count back when it is
 *               retired (deleted durably, or dropped), not when it is freed, so
 *               queries still running on a deleted scene do not block MeshDelete.
 *               Its tree stays where it is (host and device) until refs reach 0.
 *   scene.refs  the store's (while stored), one per query job or storage op.
 *
 * Adding and removing transfer a reference: tdm_store_add_* takes the caller's,
 * tdm_store_remove_* hands the store's to the caller. */
#ifndef TDM_DAEMON_STORE_H
#define TDM_DAEMON_STORE_H

#include <stdint.h>

#include "../workpile/sched.h"
#include "../workpile/scene.h"
#include "canon.h"

typedef struct tdm_stored_mesh {
    uint8_t id[TDM_ID_LEN];
    char *name;
    uint32_t n_verts, n_tris;
    uint64_t bytes;  /* canonical content + tree blob: what max_meshes_bytes counts */
    tdm_bvh *bvh;    /* owned */
    tdm_sched *engine; /* borrowed: the engine the tree was added to (tdm_sched_mesh_add succeeded),
                           NULL when it was not; the last unref removes it there before freeing it */
    uint32_t refs;
    uint32_t scenes;
    int stored;
    struct tdm_stored_mesh *hnext, *prev, *next;
} tdm_stored_mesh;

typedef struct tdm_stored_scene {
    uint8_t id[TDM_ID_LEN];
    char *name;
    tdm_scene *scene;          /* owned; borrows the meshes' trees */
    tdm_stored_mesh **meshes;  /* distinct meshes used: one ref and one `scenes` count each */
    uint32_t n_meshes;
    uint32_t refs;
    int retired;
    int stored;
    struct tdm_stored_scene *hnext, *prev, *next;
} tdm_stored_scene;

typedef struct tdm_store tdm_store;

tdm_store *tdm_store_new(void);
/* Drops the store's references; objects referenced elsewhere stay alive. */
void tdm_store_free(tdm_store *s);

/* A new mesh with one reference (the caller's); takes ownership of bvh, copies name. NULL: memory.
 * engine is NULL; the caller sets it once the tree is added to an engine. */
tdm_stored_mesh *tdm_stored_mesh_new(const uint8_t id[TDM_ID_LEN], const char *name, uint32_t n_verts,
                                     uint32_t n_tris, uint64_t bytes, tdm_bvh *bvh);
void tdm_stored_mesh_ref(tdm_stored_mesh *m);
/* At 0: tdm_sched_mesh_remove (never blocks) when m->engine is set, then frees. */
void tdm_stored_mesh_unref(tdm_stored_mesh *m);

/* A new scene with one reference (the caller's); takes ownership of `scene`
 * (also on failure), copies name, takes a reference and a `scenes` count on each
 * distinct mesh of meshes[0..n). NULL: memory. */
tdm_stored_scene *tdm_stored_scene_new(const uint8_t id[TDM_ID_LEN], const char *name, tdm_scene *scene,
                                       tdm_stored_mesh *const *meshes, uint32_t n);
void tdm_stored_scene_ref(tdm_stored_scene *sc);
void tdm_stored_scene_unref(tdm_stored_scene *sc);
/* Gives the meshes' `scenes` counts back (once; unref does it too). */
void tdm_stored_scene_retire(tdm_stored_scene *sc);

tdm_stored_mesh *tdm_store_find_mesh(tdm_store *s, const uint8_t id[TDM_ID_LEN]);
tdm_stored_scene *tdm_store_find_scene(tdm_store *s, const uint8_t id[TDM_ID_LEN]);
/* The id must not be stored yet. */
void tdm_store_add_mesh(tdm_store *s, tdm_stored_mesh *m);
void tdm_store_remove_mesh(tdm_store *s, tdm_stored_mesh *m);
void tdm_store_add_scene(tdm_store *s, tdm_stored_scene *sc);
void tdm_store_remove_scene(tdm_store *s, tdm_stored_scene *sc);

/* In insertion order; follow ->next. */
tdm_stored_mesh *tdm_store_meshes(tdm_store *s);
tdm_stored_scene *tdm_store_scenes(tdm_store *s);
uint32_t tdm_store_n_meshes(const tdm_store *s);
uint32_t tdm_store_n_scenes(const tdm_store *s);
uint64_t tdm_store_bytes(const tdm_store *s); /* of stored meshes */

/* Budget held for MeshPuts in progress, so that concurrent puts cannot overrun
 * max_meshes_bytes together. */
uint64_t tdm_store_reserved(const tdm_store *s);
void tdm_store_reserve(tdm_store *s, uint64_t bytes);
void tdm_store_unreserve(tdm_store *s, uint64_t bytes);

#endif
