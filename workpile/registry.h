/* The registry of resident meshes: which host trees have device copies, with a
 * reference count each, so that the scheduler can tell whether a task can run on
 * a GPU engine and find the copy it names.
 *
 * Per device: a tree registered has one copy for each of the registry's
 * devices (the scheduler's GPU-resident engines, one per listed device; a
 * copy may be NULL for a device that failed), registered and removed together
 * under one reference count, and looked up by device: a task run on device d
 * carries device d's copies.
 *
 * Keyed by the host tree's address: a tree is registered while it is alive and
 * unchanged (the daemon's catalogue holds it). A tree whose last reference is
 * dropped is not freed at once (a run in progress may still use its copies:
 * lookups hand out bare pointers) but moved to a list that
 * tdm_registry_free_removed empties, device by device; the scheduler calls it
 * on a lane of the device, where no run can be using the copies (a tree leaves
 * only once no query holds it): at the start of a run (for the run's device), of
 * an upload (for each device), and on a free lane (tdm_sched_reclaim).
 *
 * Every function is safe from any thread (locks inside; copies are freed
 * outside the lock that lookups take). The copies are opaque here: the engine
 * that made them frees them through the callback. */
#ifndef TDM_WORKPILE_REGISTRY_H
#define TDM_WORKPILE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "../geom/bvh.h"

typedef struct tdm_registry tdm_registry;

/* Frees device `device`'s copy (never NULL). */
typedef void (*tdm_registry_free_fn)(void *ctx, int device, void *copy);

/* A registry of n_devices copies per tree (1 .. 64). Returns 0, TDM_EINVAL,
 * TDM_ENOMEM or TDM_ESYS. */
int tdm_registry_create(int n_devices, tdm_registry **out);
/* Frees every copy, registered or removed, through free_copy(ctx, device, copy). */
void tdm_registry_destroy(tdm_registry *r, tdm_registry_free_fn free_copy, void *ctx);
int tdm_registry_devices(const tdm_registry *r);

/* Device d's copy of bvh, or NULL when it is not registered. */
void *tdm_registry_find(tdm_registry *r, int d, const tdm_bvh *bvh);
/* Two lookups under one lock (the feeders' hot path): *ca and *cb, NULL where missing. */
void tdm_registry_find2(tdm_registry *r, int d, const tdm_bvh *a, const tdm_bvh *b, void **ca, void **cb);
/* The copies of n trees on device d under one take of the lock (a scene's
 * objects): copies[i] for bvhs[i], NULL where not resident. Returns the
 * registry's epoch at the lookup (tdm_registry_epoch). */
uint64_t tdm_registry_find_n(tdm_registry *r, int d, const tdm_bvh *const *bvhs, size_t n, void **copies);
/* How many times a tree has left the registry (its last reference dropped). Copies
 * found at epoch E are all still registered, so not freed, while the epoch is
 * still E: what lets a GPU engine keep what it built from them (a robot scene's
 * program, gpu.h) without looking them up again. */
uint64_t tdm_registry_epoch(tdm_registry *r);
/* Counts one more reference to a registered tree: 1, or 0 when it is not registered. */
int tdm_registry_ref(tdm_registry *r, const tdm_bvh *bvh);
/* Registers bvh's copies (copies[d] for each device d) with one reference. The
 * caller makes sure bvh is not registered (the scheduler serialises uploads).
 * Returns 0 or TDM_ENOMEM (nothing registered, the copies still the caller's). */
int tdm_registry_insert(tdm_registry *r, const tdm_bvh *bvh, void *const *copies);
/* Drops a reference; at zero the tree leaves the registry for the removed list.
 * An unregistered tree is ignored. */
void tdm_registry_unref(tdm_registry *r, const tdm_bvh *bvh);
/* Frees device d's copies of the removed trees through free_copy(ctx, d, copy);
 * a removed tree is forgotten once every device's copy is freed. */
void tdm_registry_free_removed(tdm_registry *r, int d, tdm_registry_free_fn free_copy, void *ctx);
/* Registered trees (each resident on every device). */
size_t tdm_registry_count(tdm_registry *r);
/* Removed trees with a copy of device d not freed yet. */
size_t tdm_registry_removed(tdm_registry *r, int d);

#endif
