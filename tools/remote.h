/* The `tandem` subcommands that talk to a server (query, mesh, scene, stats) and what they
 * share: finding the server and connecting to it. They use libtandem's blocking API. */
#ifndef TDM_TOOLS_REMOTE_H
#define TDM_TOOLS_REMOTE_H

#include <tandem/tandem.h>

/* --server when given, else $TANDEM_SERVER, else 127.0.0.1:7450. */
const char *tdm_cli_server(const char *opt);
/* Connects (5 s timeout) and says hello as "tandem-cli" with $TANDEM_AUTH_TOKEN; prints the reason and returns NULL
 * on failure. The caller frees the client with tdm_client_free. */
tdm_client *tdm_cli_connect(const char *server);
/* A tdm_multi over the comma-separated servers (as tdm_cli_connect, one connection each),
 * or NULL after printing why. */
tdm_multi *tdm_cli_multi_connect(const char *server);
/* on: the scenes put through the connections made from now on are ephemeral (held by tandemd
 * while this process's connection is open: a query's scene goes when the command ends). */
void tdm_cli_set_ephemeral(int on);
/* Parses a 64-hex-digit id given for opt; prints an error and returns -1 otherwise. */
int tdm_cli_id(const char *opt, const char *hex, uint8_t id[TDM_ID_BYTES]);

int tdm_cmd_query(int argc, char **argv);
int tdm_cmd_mesh(int argc, char **argv);
int tdm_cmd_scene(int argc, char **argv);
int tdm_cmd_stats(int argc, char **argv);
/* `tandem bench load` (bench_load.c). */
int tdm_cmd_bench(int argc, char **argv);

#endif
