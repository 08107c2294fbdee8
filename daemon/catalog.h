/* The catalogue: the meshes (with their trees) and scenes tandemd holds, by id.
 *
 * One table per kind of id: meshes by mesh id, robots by robot id, scenes (rigid
 * and robot scenes) by scene id. An object is
 * in its table while it is listed (what requests see: lookups, MeshList,
 * SceneList, the byte budget) or on disk (its file written, as of the last op
 * the writer thread ran). The two differ only while a writer op is in flight: a
 * mesh just written is on disk and not yet listed until the loop takes the
 * put's completion; a deleted one is unlisted at once and stays on disk until
 * the writer has removed its file (an ephemeral scene has no file: "on disk" is
 * then its stored state in the writer's order, and it is never loaded again after
 * a restart). Requests look up listed objects; the writer
 * asks whether an id is on disk, so that a MeshPut of a stored mesh is answered
 * "exists" without building its tree again, and its answer follows the order of
 * the writer's ops (a delete queued before a put has removed the file by then).
 *
 * Threads: listing, the insertion-ordered lists, the counters and the reference
 * counts are the loops' (under the server's lock, io.h); on-disk marks are the writer thread's (the
 * loader's at start-up); the tables are shared, under the catalogue's lock. What
 * a query job or writer op reads through a reference it holds (a scene's
 * tdm_scene, the meshes' trees) never changes. An object on disk and not listed
 * is held by the writer op that wrote it or that removes it.
 *
 * Lifetimes are reference counts, so that deleting a mesh or scene never frees
 * what an in-flight query still reads:
 *
 *   mesh.refs   the catalogue's (while listed), one per scene using it, one per
 *               writer op holding it. Freed at 0.
 *   mesh.scenes scenes, listed or being stored, that use the mesh: MeshDelete
 *               refuses while it is > 0. A scene gives its count back when it is
 *               retired (deleted durably, or dropped), not when it is freed, so
 *               queries still running on a deleted scene do not block MeshDelete.
 *               Its tree stays where it is (host and device) until refs reach 0.
 *   scene.refs  the catalogue's (while listed), one per query job or writer op.
 *   mesh.robots robots, listed or being stored, that use the mesh (as mesh.scenes).
 *   robot.refs  the catalogue's (while listed), one per robot scene, one per writer op.
 *   robot.scenes robot scenes, listed or being stored, built on the robot:
 *               RobotDelete refuses while it is > 0; given back at retirement.
 *
 * Ownership (owners.h): a listed object has a non-empty owner set; requests see
 * only their tenant's objects (request_owner.c). An owner that deletes a shared
 * object leaves the set and the object stays listed; the last owner's delete
 * unlists it as above. Every scene or robot a tenant owns uses only objects that
 * tenant owns: puts look their references up in the tenant's namespace, and a
 * delete is refused while the tenant's own scenes or robots use the object.
 *
 * Listing and unlisting transfer a reference: tdm_catalog_add_* takes the
 * caller's, tdm_catalog_remove_* hands the catalogue's to the caller. */
#ifndef TDM_DAEMON_CATALOG_H
#define TDM_DAEMON_CATALOG_H

#include <stdint.h>

#include "../robot/robot_scene.h"
#include "../workpile/scene.h"
#include "../workpile/sched.h"
#include "content_id.h"
#include "owners.h"

/* An object's id and its place in its table (catalog.c's). */
typedef struct tdm_catalog_entry {
    uint8_t id[TDM_ID_LEN];
    struct tdm_catalog_entry *hnext; /* its table's chain */
    struct tdm_catalog *catalog;     /* set when it first enters a table */
    uint8_t in_table;                /* listed || on_disk */
    uint8_t listed;                  /* the loops (server's lock) */
    uint8_t on_disk;                 /* writer thread (an ephemeral object: stored, as of the writer's ops) */
    uint8_t ephemeral;               /* set before the object is first listed or stored, then fixed: held in
                                        memory only, no file or owner record ever written (scenes put with
                                        `ephemeral`) */
    tdm_owners owners;               /* the loops: the tenants that own it (owners.h); freed with the object */
} tdm_catalog_entry;

typedef struct tdm_stored_mesh {
    tdm_catalog_entry entry; /* first: entry.id is the mesh id */
    char *name;
    uint32_t n_verts, n_tris;
    uint64_t bytes;  /* canonical content + tree blob: what max_meshes_bytes counts */
    tdm_bvh *bvh;    /* owned */
    tdm_sched *engine; /* borrowed: the engine the tree was added to (tdm_sched_mesh_add succeeded),
                           NULL when it was not; the last unref removes it there before freeing it */
    uint32_t refs;
    uint32_t scenes;
    uint32_t robots; /* robots, listed or being stored, that use the mesh: MeshDelete refuses while > 0 */
    struct tdm_stored_mesh *prev, *next; /* listed, in insertion order */
} tdm_stored_mesh;

/* A robot: its URDF (and SRDF) parsed with mesh filenames mapped to stored meshes
 * (each element's mesh_path is the hex id of its mesh). */
typedef struct tdm_stored_robot {
    tdm_catalog_entry entry;   /* first: entry.id is the robot id */
    char *name;
    tdm_robot *robot;          /* owned */
    tdm_stored_mesh **meshes;  /* distinct meshes used: one ref and one `robots` count each */
    uint32_t n_meshes;
    uint32_t refs;
    uint32_t scenes;           /* robot scenes, listed or being stored: RobotDelete refuses while > 0 */
    int retired;
    struct tdm_stored_robot *prev, *next; /* listed, in insertion order */
    /* NULL, or the element trees its robot scenes share (owned; robot_build.c's
     * tdm__robot_scene_build makes them with the first scene, on the writer's or the
     * loader's thread, and publishes them atomically; freed with the robot, after
     * every scene, each of which holds a reference to the robot) */
    struct tdm_robot_elems *elems;
    /* NULL, or why its elements were refused over max_robot_triangles (or for a scaled
     * vertex over float: TDM_ERANGE either way, as lasting as the robot; owned; set once,
     * atomically, by the first build refused): later scenes are refused with it at once
     * instead of building up to the limit again */
    char *elems_refused;
} tdm_stored_robot;

typedef struct tdm_stored_scene {
    tdm_catalog_entry entry;   /* first: entry.id is the scene id */
    char *name;
    tdm_scene *scene;          /* owned (robot scenes: rs->scene, owned through rs); rigid scenes borrow the
                                  meshes' trees */
    /* Robot scenes (else NULL): the robot scene (owned, its trees its own), its planning
     * scene (owned: the world objects' ids), the robot (one ref and one `scenes` count),
     * and the engine its first n_resident trees were added to (removed when freed). */
    tdm_robot_scene *rs;
    tdm_planning_scene *ps;
    struct tdm_stored_robot *robot;
    tdm_sched *engine;
    uint32_t n_resident;
    tdm_stored_mesh **meshes;  /* distinct meshes used: one ref and one `scenes` count each */
    uint32_t n_meshes;
    uint32_t refs;
    uint32_t holders;          /* ephemeral: the connections that hold it (request_scene.c; the loops') */
    int retired;
    struct tdm_stored_scene *prev, *next; /* listed, in insertion order */
} tdm_stored_scene;

typedef struct tdm_catalog tdm_catalog;

tdm_catalog *tdm_catalog_new(void);
/* Unlists everything, forgets what is on disk, and drops the catalogue's
 * references; objects referenced elsewhere stay alive. No writer op may be in
 * flight. */
void tdm_catalog_free(tdm_catalog *c);

/* A new mesh with one reference (the caller's); takes ownership of bvh, copies name. NULL: memory.
 * engine is NULL; the caller sets it once the tree is added to an engine. Any thread. */
tdm_stored_mesh *tdm_stored_mesh_new(const uint8_t id[TDM_ID_LEN], const char *name, uint32_t n_verts,
                                     uint32_t n_tris, uint64_t bytes, tdm_bvh *bvh);
void tdm_stored_mesh_ref(tdm_stored_mesh *m);
/* At 0: tdm_sched_mesh_remove (never blocks) when m->engine is set, then frees
 * (leaving its table first, should it still be there). */
void tdm_stored_mesh_unref(tdm_stored_mesh *m);

/* A new scene with one reference (the caller's); takes ownership of `scene`
 * (also on failure), copies name, takes a reference and a `scenes` count on each
 * distinct mesh of meshes[0..n). NULL: memory. */
tdm_stored_scene *tdm_stored_scene_new(const uint8_t id[TDM_ID_LEN], const char *name, tdm_scene *scene,
                                       tdm_stored_mesh *const *meshes, uint32_t n);
void tdm_stored_scene_ref(tdm_stored_scene *sc);
void tdm_stored_scene_unref(tdm_stored_scene *sc);
/* Lets a reference go unless it is the last (holding the server's lock shared): 1 when let go,
 * 0 when the caller must take the lock exclusive and call tdm_stored_scene_unref. */
int tdm_stored_scene_unref_shared(tdm_stored_scene *sc);
/* Gives the meshes' `scenes` counts back (once; unref does it too). */
void tdm_stored_scene_retire(tdm_stored_scene *sc);

/* A new robot with one reference; takes ownership of robot (also on failure), copies
 * name, takes a reference and a `robots` count on each distinct mesh. NULL: memory. */
tdm_stored_robot *tdm_stored_robot_new(const uint8_t id[TDM_ID_LEN], const char *name, tdm_robot *robot,
                                       tdm_stored_mesh *const *meshes, uint32_t n);
void tdm_stored_robot_ref(tdm_stored_robot *r);
void tdm_stored_robot_unref(tdm_stored_robot *r);
/* Gives the meshes' `robots` counts back (once; unref does it too). */
void tdm_stored_robot_retire(tdm_stored_robot *r);

/* A new robot scene with one reference; takes ownership of rs and ps (also on
 * failure), copies name, and takes over one reference and one `scenes` count on
 * robot that the caller holds (given back when it is retired and freed; on failure
 * they stay the caller's). It touches no count, so the writer thread may call it.
 * The caller adds rs's trees to an engine and records it in ->engine, ->n_resident.
 * NULL: memory. */
tdm_stored_scene *tdm_stored_scene_new_robot(const uint8_t id[TDM_ID_LEN], const char *name, tdm_robot_scene *rs,
                                             tdm_planning_scene *ps, tdm_stored_robot *robot);

/* ---- listed: the loops, holding the server's lock ---- */

tdm_stored_mesh *tdm_catalog_find_mesh(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
tdm_stored_scene *tdm_catalog_find_scene(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
/* The id must not be listed yet. */
void tdm_catalog_add_mesh(tdm_catalog *c, tdm_stored_mesh *m);
void tdm_catalog_remove_mesh(tdm_catalog *c, tdm_stored_mesh *m);
void tdm_catalog_add_scene(tdm_catalog *c, tdm_stored_scene *sc);
void tdm_catalog_remove_scene(tdm_catalog *c, tdm_stored_scene *sc);

tdm_stored_robot *tdm_catalog_find_robot(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
void tdm_catalog_add_robot(tdm_catalog *c, tdm_stored_robot *r);
void tdm_catalog_remove_robot(tdm_catalog *c, tdm_stored_robot *r);
tdm_stored_robot *tdm_catalog_robots(tdm_catalog *c);
uint32_t tdm_catalog_n_robots(const tdm_catalog *c);

/* In insertion order; follow ->next. */
tdm_stored_mesh *tdm_catalog_meshes(tdm_catalog *c);
tdm_stored_scene *tdm_catalog_scenes(tdm_catalog *c);
uint32_t tdm_catalog_n_meshes(const tdm_catalog *c);
uint32_t tdm_catalog_n_scenes(const tdm_catalog *c);
uint32_t tdm_catalog_n_ephemeral_scenes(const tdm_catalog *c); /* of them, ephemeral */
uint64_t tdm_catalog_bytes(const tdm_catalog *c); /* of listed meshes */

/* Budget held for MeshPuts in progress, so that concurrent puts cannot overrun
 * max_meshes_bytes together. */
uint64_t tdm_catalog_reserved(const tdm_catalog *c);
void tdm_catalog_reserve(tdm_catalog *c, uint64_t bytes);
void tdm_catalog_unreserve(tdm_catalog *c, uint64_t bytes);

/* ---- on disk: the writer thread (the loader at start-up, before any op) ---- */

/* 1 when a file with this id is on disk, else 0. */
int tdm_catalog_mesh_on_disk(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
int tdm_catalog_scene_on_disk(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
/* The object's file is written (the caller holds a reference to it). */
void tdm_catalog_mesh_written(tdm_catalog *c, tdm_stored_mesh *m);
void tdm_catalog_scene_written(tdm_catalog *c, tdm_stored_scene *sc);
/* The file with this id is removed. */
void tdm_catalog_mesh_removed(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
void tdm_catalog_scene_removed(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
int tdm_catalog_robot_on_disk(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);
void tdm_catalog_robot_written(tdm_catalog *c, tdm_stored_robot *r);
void tdm_catalog_robot_removed(tdm_catalog *c, const uint8_t id[TDM_ID_LEN]);

#endif
