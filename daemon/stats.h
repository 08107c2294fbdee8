/* Stats: the StatsReply, from the server's counters, the pooler's and the
 * engine's; its handler (request_handlers.h) and the same numbers as a log line
 * at shutdown. */
#ifndef TDM_DAEMON_STATS_H
#define TDM_DAEMON_STATS_H

#include "server.h"
#include "tandem.pb-c.h"

/* Fills r (a loop, holding the server's lock). Strings point into `detail` and static storage: r is
 * valid while detail is. */
void tdm_stats_fill(tdm_server *srv, Tandem__V1__StatsReply *r, char *detail, size_t detail_len);

/* One info line with the same numbers, for the log at shutdown. */
void tdm_stats_log(tdm_server *srv);

#endif
