/* Tenants: the namespaces that own meshes, scenes and robots.
 *
 * A tenant is a name with an index (what owner sets record in memory). Index 0 is
 * the default tenant, named "default": without a tenants file every client is it
 * (with the --auth-token, or none), and stored objects without an owner record
 * (data directories written before tenants existed) belong to it. With
 * --tenants-file, each line `NAME TOKEN` adds a tenant that a Hello's token
 * selects (a line named "default" gives the default tenant a token); Unix-socket
 * clients that give no token are the tenant "uid:N" of their peer uid
 * (SO_PEERCRED), made when first seen. Names read back from owner records are
 * made too, so that objects of a tenant since removed from the file stay its own.
 *
 * Tokens are kept as SHA-256 digests; a lookup hashes the token once and compares
 * it with every tenant's digest with CRYPTO_memcmp, without stopping at a match,
 * so that neither which tenant matched nor how much of a token did shows in the
 * time taken.
 *
 * Loop thread (the loader's before the loop runs); names are never removed, so an
 * index stays valid for the registry's life. */
#ifndef TDM_DAEMON_TENANTS_H
#define TDM_DAEMON_TENANTS_H

#include <stddef.h>
#include <stdint.h>

#include "../workpile/pooler.h"

#define TDM_TENANT_DEFAULT 0u
#define TDM_TENANT_DEFAULT_NAME "default"
/* Longest tenant name (file names: letters, digits, '.', '_', '-'; "uid:N" made here). */
#define TDM_TENANT_NAME_MAX 64

typedef struct tdm_tenants tdm_tenants;

/* Whose turn it is (--share-by): a connection's, or a tenant's (tdm_tenants_share), held by
 * each connection it covers (conn.h) while any of their work is in flight. */
typedef struct tdm_share {
    tdm_pooler_owner pool; /* the engine lanes' turns (workpile/pooler.h): the pooler's, under its lock */
    uint64_t build_turn;   /* the builder's turns (writer.c): when it last took one of its large MeshPuts
                              (0: never); the writer's, under its lock */
} tdm_share;

/* A registry holding only the default tenant (no token). NULL: memory. */
tdm_tenants *tdm_tenants_new(void);
void tdm_tenants_free(tdm_tenants *t);

/* Reads a tenants file: one tenant a line, `NAME TOKEN` separated by spaces or
 * tabs; blank lines and lines whose first non-blank character is '#' are skipped.
 * NAME: 1 to TDM_TENANT_NAME_MAX letters, digits, '.', '_' or '-'; TOKEN: at least
 * min_token printable ASCII characters, no spaces. Names and tokens must be
 * distinct. 0, or -1 with a message naming the file and line in err (the registry
 * may then hold part of the file: free it). */
int tdm_tenants_load_file(tdm_tenants *t, const char *path, size_t min_token, char *err, size_t errlen);
/* 1 once a tenants file was loaded. */
int tdm_tenants_from_file(const tdm_tenants *t);
/* The tenant whose token this is: 0 and *out, or -1 (no tenant has it). */
int tdm_tenants_by_token(const tdm_tenants *t, const char *token, uint32_t *out);
/* The tenant named `name`, made if missing: 0 and *out, or TDM_ENOMEM / TDM_EINVAL
 * (empty or longer than TDM_TENANT_NAME_MAX). */
int tdm_tenants_intern(tdm_tenants *t, const char *name, uint32_t *out);
/* The name of tenant idx (valid for the registry's life). */
const char *tdm_tenants_name(const tdm_tenants *t, uint32_t idx);
uint32_t tdm_tenants_count(const tdm_tenants *t);
/* Tenant idx's share (its connections' work takes turns with other tenants' with --share-by
 * tenant), made when first asked and kept, at one address, for the registry's life. NULL:
 * memory. */
tdm_share *tdm_tenants_share(tdm_tenants *t, uint32_t idx);

#endif
