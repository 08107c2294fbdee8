/* The registry of resident meshes: which host trees have a device copy, with a
 * reference count each, so that the scheduler can tell whether a task can run on
 * a GPU engine and find the copy it names.
 *
 * Keyed by the host tree's address: a tree is registered while it is alive and
 * unchanged (the daemon's catalogue holds it). A copy whose last reference is
 * dropped is not freed at once (a run in progress may still use it: lookups hand
 * out bare pointers) but moved to a list that tdm_registry_free_removed empties;
 * the scheduler calls it where no run can be using the copies: at the start of
 * a run and of an upload, which see only copies registered now.
 *
 * Every function is safe from any thread (one lock inside). The copies are
 * opaque here: the engine that made them frees them through the callback. */
#ifndef TDM_WORKPILE_REGISTRY_H
#define TDM_WORKPILE_REGISTRY_H

#include <stddef.h>

#include "../geom/bvh.h"

typedef struct tdm_registry tdm_registry;

/* Returns 0, TDM_ENOMEM or TDM_ESYS. */
int tdm_registry_create(tdm_registry **out);
/* Frees every copy, registered or removed, through free_copy(ctx, copy). */
void tdm_registry_destroy(tdm_registry *r, void (*free_copy)(void *ctx, void *copy), void *ctx);

/* The copy of bvh, or NULL when it is not registered. */
void *tdm_registry_find(tdm_registry *r, const tdm_bvh *bvh);
/* Two lookups under one lock (the feeders' hot path): *ca and *cb, NULL where missing. */
void tdm_registry_find2(tdm_registry *r, const tdm_bvh *a, const tdm_bvh *b, void **ca, void **cb);
/* Counts one more reference to a registered tree: 1, or 0 when it is not registered. */
int tdm_registry_ref(tdm_registry *r, const tdm_bvh *bvh);
/* Registers bvh's copy with one reference. The caller makes sure bvh is not
 * registered (the scheduler serialises uploads). Returns 0 or TDM_ENOMEM
 * (nothing registered). */
int tdm_registry_insert(tdm_registry *r, const tdm_bvh *bvh, void *copy);
/* Drops a reference; at zero the copy leaves the registry for the removed list.
 * An unregistered tree is ignored. */
void tdm_registry_unref(tdm_registry *r, const tdm_bvh *bvh);
/* Frees the removed copies through free_copy(ctx, copy). */
void tdm_registry_free_removed(tdm_registry *r, void (*free_copy)(void *ctx, void *copy), void *ctx);
/* Registered trees. */
size_t tdm_registry_count(tdm_registry *r);

#endif
