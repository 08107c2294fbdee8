/* Wrong auth tokens counted by client address, so that guessing from one address
 * is throttled without touching anyone else (auth-fail-* options, config.c).
 *
 * An address that sends `max_failures` wrong tokens within `window_s` seconds is
 * blocked for `block_s` seconds: its Hellos are refused, whatever their token,
 * until then. The table holds at most `max_entries` addresses; when full, the
 * entry blocked or failing longest ago makes room (an address that fails rarely
 * can so be forgotten, never one whose block is newer than every other).
 *
 * Loop thread only. Addresses are the peer's IP address as text (conn.h's addr),
 * or "unix uid N" for Unix-socket clients. */
#ifndef TDM_DAEMON_AUTH_LIMIT_H
#define TDM_DAEMON_AUTH_LIMIT_H

#include <stdint.h>

typedef struct tdm_auth_limit tdm_auth_limit;

/* max_failures 0: never blocks. NULL: memory. */
tdm_auth_limit *tdm_auth_limit_new(uint32_t max_failures, uint32_t window_s, uint32_t block_s, uint32_t max_entries);
void tdm_auth_limit_free(tdm_auth_limit *l);
/* Seconds (rounded up) the address stays blocked at now_ns, 0 when it is not. */
uint32_t tdm_auth_limit_blocked(tdm_auth_limit *l, const char *addr, uint64_t now_ns);
/* A wrong token from addr at now_ns. Returns 1 when this one starts a block. */
int tdm_auth_limit_fail(tdm_auth_limit *l, const char *addr, uint64_t now_ns);

#endif
