/* Hello: the protocol version, the auth token, the client's name; the reply
 * says which engine runs and every limit (proto/README.md, "Hello"). */
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

void tdm__hello(tdm_conn *c, uint64_t id, const Tandem__V1__Hello *h)
{
    const tdm_config *cfg = c->srv->cfg;
    if (h->protocol_version != PROTOCOL_VERSION) {
        tdm_conn_send_error(c, id, E(UNSUPPORTED_VERSION), "protocol_version", -1,
                            "protocol version %u is not supported: this server (tandemd %s) speaks version %u",
                            h->protocol_version, TDM_VERSION, PROTOCOL_VERSION);
        return;
    }
    if (cfg->auth_token[0] && !token_equal(h->auth_token ? h->auth_token : "", cfg->auth_token)) {
        /* one warning a second at most: a guessing client must not fill the log */
        static uint64_t last_ns, suppressed;
        uint64_t now = uv_hrtime();
        if (last_ns == 0 || now - last_ns >= 1000000000ull) {
            if (suppressed)
                tdm_log_warn("conn %llu (%s): wrong auth token; closing (and %llu more wrong tokens since the last "
                             "such line)",
                             (unsigned long long)c->id, c->peer, (unsigned long long)suppressed);
            else
                tdm_log_warn("conn %llu (%s): wrong auth token; closing", (unsigned long long)c->id, c->peer);
            last_ns = now;
            suppressed = 0;
        } else {
            suppressed++;
        }
        tdm_conn_refuse_auth(c, id); /* the error after a delay: guesses cost time */
        return;
    }
    if (tdm__check_name(c, id, h->client_name, "client_name") != 0) return;
    tdm_log_sanitize(h->client_name ? h->client_name : "", SIZE_MAX, c->client_name, sizeof c->client_name);
    if (!c->authed)
        tdm_log_info("conn %llu (%s): hello from \"%s\"", (unsigned long long)c->id, c->peer, c->client_name);
    if (!c->authed) {
        c->authed = 1;
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
    Tandem__V1__HelloReply r = TANDEM__V1__HELLO_REPLY__INIT;
    r.protocol_version = PROTOCOL_VERSION;
    r.server_version = TDM_VERSION;
    r.engine = engine_enum(tdm_sched_backend(c->srv->engine));
    r.limits = &l;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_HELLO, &r);
}

