/* Hello: the protocol version, the auth token, the client's name; the reply
 * says which engine runs and every limit (proto/README.md, "Hello"). */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "log.h"
#include "request_handlers.h"

#define PROTOCOL_VERSION 1u

static Tandem__V1__Engine engine_enum(tdm_backend_kind k)
{
    switch (k) {
    case TDM_BACKEND_CPU: return TANDEM__V1__ENGINE__ENGINE_CPU;
    case TDM_BACKEND_GPU: return TANDEM__V1__ENGINE__ENGINE_GPU;
    case TDM_BACKEND_HYBRID: return TANDEM__V1__ENGINE__ENGINE_HYBRID;
    default: return TANDEM__V1__ENGINE__ENGINE_UNSPECIFIED;
    }
}

static int token_equal(const char *a, const char *b)
{
    /* compare digests, so that neither the contents nor the length leak through timing */
    uint8_t da[TDM_ID_LEN], db[TDM_ID_LEN];
    if (tdm_sha256(a, strlen(a), da) != 0 || tdm_sha256(b, strlen(b), db) != 0) return 0;
    return CRYPTO_memcmp(da, db, TDM_ID_LEN) == 0;
}

/* The key wrong tokens are counted under (auth_limit.h). */
static void auth_key(const tdm_conn *c, char *out, size_t len)
{
    if (c->is_unix) snprintf(out, len, "unix uid %ld", c->peer_uid);
    else snprintf(out, len, "%s", c->addr);
}

/* Which tenant the Hello is: 0 and *tenant, -1 for a wrong or missing token, or
 * TDM_ENOMEM. Without a tenants file, the default tenant behind --auth-token (or
 * none); with one, the tenant whose token it is, or for a Unix-socket client that
 * gives none, its user's namespace uid:N. */
static int hello_tenant(tdm_conn *c, const char *token, uint32_t *tenant)
{
    tdm_server *srv = c->srv;
    *tenant = TDM_TENANT_DEFAULT;
    if (!tdm_tenants_from_file(srv->tenants))
        return !srv->cfg->auth_token[0] || token_equal(token, srv->cfg->auth_token) ? 0 : -1;
    if (token[0]) return tdm_tenants_by_token(srv->tenants, token, tenant);
    if (!c->is_unix || c->peer_uid < 0) return -1;
    char name[32];
    snprintf(name, sizeof name, "uid:%ld", c->peer_uid);
    return tdm_tenants_intern(srv->tenants, name, tenant) == 0 ? 0 : TDM_ENOMEM;
}

void tdm__hello(tdm_conn *c, uint64_t id, const Tandem__V1__Hello *h)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (h->protocol_version != PROTOCOL_VERSION) {
        tdm_conn_send_error(c, id, E(UNSUPPORTED_VERSION), "protocol_version", -1,
                            "protocol version %u is not supported: this server (tandemd %s) speaks version %u",
                            h->protocol_version, TDM_VERSION, PROTOCOL_VERSION);
        return;
    }
    char key[80];
    auth_key(c, key, sizeof key);
    uint64_t now = uv_hrtime();
    unsigned long long held;
    uint32_t left = tdm_auth_limit_blocked(srv->auth_limit, key, now);
    if (left) {
        static tdm_log_limit blocked_log;
        if (tdm_log_limit_pass(&blocked_log, now, &held))
            tdm_log_warn("conn %llu (%s): Hello refused: too many wrong auth tokens from this address, %u s of "
                         "auth-fail-block left%s%.0llu%s",
                         (unsigned long long)c->id, c->peer, left, held ? " (and " : "", held,
                         held ? " more such refusals since the last such line)" : "");
        tdm_conn_send_error(c, id, E(UNAUTHENTICATED), "auth_token", -1,
                            "too many wrong auth tokens from this address: Hellos are refused for %u more seconds",
                            left);
        tdm_conn_drain(c, "address blocked after wrong auth tokens");
        return;
    }
    uint32_t tenant;
    int rc = hello_tenant(c, h->auth_token ? h->auth_token : "", &tenant);
    if (rc == TDM_ENOMEM) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    if (rc != 0) {
        /* one warning a second at most: a guessing client must not fill the log */
        static tdm_log_limit wrong_log;
        if (tdm_log_limit_pass(&wrong_log, now, &held)) {
            if (held)
                tdm_log_warn("conn %llu (%s): wrong auth token; closing (and %llu more wrong tokens since the last "
                             "such line)",
                             (unsigned long long)c->id, c->peer, held);
            else
                tdm_log_warn("conn %llu (%s): wrong auth token; closing", (unsigned long long)c->id, c->peer);
        }
        if (tdm_auth_limit_fail(srv->auth_limit, key, now))
            tdm_log_warn("%s: %u wrong auth tokens within %u s (auth-fail-max): its Hellos are refused for %u s",
                         c->is_unix ? key : c->peer, cfg->auth_fail_max, cfg->auth_fail_window, cfg->auth_fail_block);
        tdm_conn_refuse_auth(c, id); /* the error after a delay: guesses cost time */
        return;
    }
    if (c->authed && tenant != c->tenant) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "auth_token", -1,
                            "a connection's tenant is set by its first Hello: this token is another tenant's");
        return;
    }
    if (tdm__check_name(c, id, h->client_name, "client_name") != 0) return;
    tdm_log_sanitize(h->client_name ? h->client_name : "", SIZE_MAX, c->client_name, sizeof c->client_name);
    if (!c->authed && tdm_tenants_from_file(srv->tenants))
        tdm_log_info("conn %llu (%s): hello from \"%s\", tenant %s", (unsigned long long)c->id, c->peer,
                     c->client_name, tdm_tenants_name(srv->tenants, tenant));
    else if (!c->authed)
        tdm_log_info("conn %llu (%s): hello from \"%s\"", (unsigned long long)c->id, c->peer, c->client_name);
    if (!c->authed) {
        c->tenant = tenant;
        c->authed = 1;
        if (srv->share_by == TDM_SHARE_TENANT) { /* without memory for the tenant's: the connection's */
            tdm_share *s = tdm_tenants_share(srv->tenants, tenant);
            if (s) c->share_of = s;
        }
        tdm_conn_leave_unauth(c);
        tdm_conn_deadline(c); /* from the hello deadline to the idle one */
    }

    Tandem__V1__Limits l = TANDEM__V1__LIMITS__INIT;
    l.max_frame_bytes = cfg->max_frame_bytes;
    l.max_vertices = cfg->max_vertices;
    l.max_triangles = cfg->max_triangles;
    l.max_objects = cfg->max_objects;
    l.max_queries = cfg->max_queries;
    l.max_contacts = cfg->max_contacts;
    l.max_pipelined = cfg->max_pipelined;
    l.max_connections = cfg->max_connections;
    l.max_meshes_bytes = cfg->max_meshes_bytes;
    l.max_reply_pairs = cfg->max_reply_pairs;
    l.max_query_tasks = cfg->max_query_tasks;
    l.max_robots = cfg->max_robots;
    l.max_robot_text_bytes = cfg->max_robot_text_bytes;
    l.max_motion_states = cfg->max_motion_states;
    l.max_query_work = cfg->max_query_work;
    l.max_ring_bytes = cfg->max_ring_bytes;
    l.max_scene_triangles = cfg->max_scene_triangles;
    l.max_robot_triangles = cfg->max_robot_triangles;
    Tandem__V1__HelloReply r = TANDEM__V1__HELLO_REPLY__INIT;
    r.protocol_version = PROTOCOL_VERSION;
    r.server_version = TDM_VERSION;
    r.engine = engine_enum(tdm_sched_backend(c->srv->engine));
    r.limits = &l;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_HELLO, &r);
}

