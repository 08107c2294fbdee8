/* Owner sets: which tenants own a stored mesh, scene or robot, each under its
 * own name for it, and the owner record that keeps the set in the data
 * directory (DIR/owners/<hex id>.owners, datadir.h).
 *
 * Objects are content-addressed, so two tenants putting the same content share
 * one object (one file, one tree on the engine); the owner set says who may list,
 * use and delete it. A delete by one owner takes that owner out of the set; the
 * object goes only when the set is empty (and nothing pins it: catalog.h).
 *
 * The record's absence means {default tenant, under the object file's name}: what
 * every object of a data directory written before tenants existed belongs to, and
 * what a single-tenant server's objects are, which so cost no extra file.
 *
 * Record content (the payload's canonical part, datadir.h): "tandem-owners-v1" and
 * a zero byte, the owner count (u32), then per owner the tenant name's length
 * (u32) and bytes and the object name's length (u32) and bytes; little-endian.
 *
 * Loop thread (the loader's before the loop runs). */
#ifndef TDM_DAEMON_OWNERS_H
#define TDM_DAEMON_OWNERS_H

#include <stddef.h>
#include <stdint.h>

#include "tenants.h"

#define TDM_OWNERS_MAGIC "tandem-owners-v1"

typedef struct tdm_owner {
    uint32_t tenant; /* tenants.h index */
    char *name;      /* owned: the tenant's name for the object */
} tdm_owner;

typedef struct tdm_owners {
    tdm_owner *v;
    uint32_t n;
} tdm_owners;

/* Index of tenant in o, or -1. */
int tdm_owners_find(const tdm_owners *o, uint32_t tenant);
/* Adds (tenant, copy of name); tenant must not be in o. 0 or TDM_ENOMEM. */
int tdm_owners_add(tdm_owners *o, uint32_t tenant, const char *name);
/* Takes tenant out (nothing when absent). */
void tdm_owners_remove(tdm_owners *o, uint32_t tenant);
void tdm_owners_clear(tdm_owners *o);

/* The record for o on an object whose file is named file_name: *out malloc'd, or
 * NULL when o is exactly {default, file_name} (no record needed). 0 or TDM_ENOMEM. */
int tdm_owners_encode(const tdm_owners *o, const tdm_tenants *t, const char *file_name, uint8_t **out, size_t *len);
/* Parses a record into *out (empty before), making its tenants in t. 0, TDM_ECORRUPT
 * (malformed, an empty set, a tenant twice) or TDM_ENOMEM; *out is left empty on error. */
int tdm_owners_decode(const uint8_t *buf, size_t len, tdm_tenants *t, tdm_owners *out);

#endif
