/* Shared by the remote subcommands: the server address and connecting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "remote.h"

const char *tdm_cli_server(const char *opt)
{
    if (opt) return opt;
    const char *env = getenv("TANDEM_SERVER");
    return env && *env ? env : "127.0.0.1:7450";
}

static int cli_ephemeral; /* tdm_cli_set_ephemeral */

void tdm_cli_set_ephemeral(int on) { cli_ephemeral = on != 0; }

tdm_client *tdm_cli_connect(const char *server)
{
    if (strchr(server, ',')) {
        tdm_cli_error("'%s': this command talks to one server; `tandem query` (--env or --urdf) and `tandem bench load` "
                      "take a comma-separated list",
                      server);
        return NULL;
    }
    /* The token comes from the environment, not the command line, where ps would show it. */
    tdm_connect_opts o = {.addr = server, .timeout_ms = 5000, .client_name = "tandem-cli",
                          .auth_token = getenv("TANDEM_AUTH_TOKEN")};
    tdm_client *c = tdm_client_connect_with(&o);
    if (!c) {
        tdm_cli_error("out of memory");
        return NULL;
    }
    if (tdm_client_err(c)) {
        tdm_cli_error("cannot connect: %s", tdm_client_errstr(c));
        tdm_client_free(c);
        return NULL;
    }
    tdm_client_set_ephemeral_scenes(c, cli_ephemeral);
    return c;
}

int tdm_cli_id(const char *opt, const char *hex, uint8_t id[TDM_ID_BYTES])
{
    if (tdm_id_from_hex(hex, id) == 0) return 0;
    tdm_cli_error("%s must be 64 hex digits (an id from `tandem mesh put` or `tandem scene put`), not '%s'", opt, hex);
    return -1;
}

/* A tdm_multi over the comma-separated servers, or NULL after printing why. */
tdm_multi *tdm_cli_multi_connect(const char *server)
{
    tdm_connect_opts o = {.addr = server, .timeout_ms = 5000, .client_name = "tandem-cli",
                          .auth_token = getenv("TANDEM_AUTH_TOKEN")};
    tdm_multi *m = tdm_multi_connect(NULL, 0, &o);
    if (!m) {
        tdm_cli_error("out of memory");
        return NULL;
    }
    if (tdm_multi_err(m)) {
        tdm_cli_error("cannot connect: %s", tdm_multi_errstr(m));
        tdm_multi_free(m);
        return NULL;
    }
    tdm_multi_set_ephemeral_scenes(m, cli_ephemeral);
    return m;
}
