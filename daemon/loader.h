/* Start-up: the data directory into the catalogue.
 *
 * Meshes first, then scenes (which name meshes). A file that fails any check (see
 * datadir.h), a tree that fails its structure check, or a scene naming a mesh
 * that did not load is logged and skipped; the server starts with the rest. What
 * loads is listed and marked on disk in the catalogue (a file that was skipped is
 * not marked, so a put of its content writes it again). Each mesh's tree is
 * added to the engine (tdm_sched_mesh_add: call before the loop runs); one that
 * the device cannot hold is logged and kept, and scenes using it run on the CPU
 * engine. */
#ifndef TDM_DAEMON_LOADER_H
#define TDM_DAEMON_LOADER_H

#include "server.h"

/* Loop thread, before the loop runs and before any writer op. Returns the
 * number of files skipped. */
size_t tdm_loader_run(tdm_server *s);

#endif
