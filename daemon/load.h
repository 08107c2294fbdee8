/* Startup: the data directory into the store.
 *
 * Meshes first, then scenes (which name meshes). A file that fails any check (see
 * persist.h), a tree that fails its structure check, or a scene naming a mesh
 * that did not load is logged and skipped; the server starts with the rest. The
 * ids loaded are marked on the storage thread's on-disk set. Each mesh's tree is
 * added to the engine (tdm_sched_mesh_add: call before the loop runs); one that
 * the device cannot hold is logged and kept, and scenes using it run on the CPU
 * engine. */
#ifndef TDM_DAEMON_LOAD_H
#define TDM_DAEMON_LOAD_H

#include "server.h"

/* Returns the number of files skipped. */
size_t tdm_load_store(tdm_server *s);

#endif
