#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../geom/base.h"
#include "log.h"

struct tdm_tls_ctx {
    SSL_CTX *ssl_ctx;
};

struct tdm_tls {
    SSL *ssl;
    BIO *in, *out; /* owned by ssl */
    int first;     /* the peer's first byte; -1 before it */
    char err[256];
};

/* The oldest queued OpenSSL error's reason, or `fallback`; clears the queue. */
static void take_reason(char *dst, size_t cap, const char *fallback)
{
    unsigned long e = ERR_peek_error();
    const char *r = !e ? NULL : ERR_SYSTEM_ERROR(e) ? strerror(ERR_GET_REASON(e)) : ERR_reason_error_string(e);
    snprintf(dst, cap, "%s", r ? r : fallback);
    ERR_clear_error();
}

static int ctx_fail(tdm_tls_ctx *c, char *err, size_t errlen, const char *what, const char *file)
{
    char why[200];
    take_reason(why, sizeof why, "unknown error");
    snprintf(err, errlen, "%s %s: %s", what, file, why);
    tdm_tls_ctx_free(c);
    return TDM_EIO;
}

int tdm_tls_ctx_new(const char *cert_file, const char *key_file, const char *ca_file, tdm_tls_ctx **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    ERR_clear_error();
    tdm_tls_ctx *c = calloc(1, sizeof *c);
    if (!c || !(c->ssl_ctx = SSL_CTX_new(TLS_server_method()))) {
        free(c);
        snprintf(err, errlen, "TLS: out of memory");
        return TDM_EIO;
    }
    SSL_CTX *s = c->ssl_ctx;
    SSL_CTX_set_min_proto_version(s, TLS1_2_VERSION); /* the highest both sides have wins: 1.3 */
    SSL_CTX_set_options(s, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* each SSL_write is one whole frame; idle connections hand their record buffers back */
    SSL_CTX_set_mode(s, SSL_MODE_RELEASE_BUFFERS);
    /* clients do not resume sessions: no TLS 1.3 tickets to make and send on every
       connection, no session cache to hold */
    SSL_CTX_set_num_tickets(s, 0);
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    if (SSL_CTX_use_certificate_chain_file(s, cert_file) != 1)
        return ctx_fail(c, err, errlen, "tls-cert", cert_file);
    if (SSL_CTX_use_PrivateKey_file(s, key_file, SSL_FILETYPE_PEM) != 1)
        return ctx_fail(c, err, errlen, "tls-key", key_file);
    if (SSL_CTX_check_private_key(s) != 1) return ctx_fail(c, err, errlen, "tls-key does not match tls-cert", key_file);
    if (ca_file && ca_file[0]) {
        if (SSL_CTX_load_verify_locations(s, ca_file, NULL) != 1) return ctx_fail(c, err, errlen, "tls-ca", ca_file);
        SSL_CTX_set_verify(s, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    *out = c;
    return 0;
}

void tdm_tls_ctx_free(tdm_tls_ctx *c)
{
    if (!c) return;
    SSL_CTX_free(c->ssl_ctx);
    free(c);
}

tdm_tls *tdm_tls_new(tdm_tls_ctx *ctx)
{
    tdm_tls *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (!(t->ssl = SSL_new(ctx->ssl_ctx))) goto fail;
    t->in = BIO_new(BIO_s_mem());
    t->out = BIO_new(BIO_s_mem());
    if (!t->in || !t->out) {
        BIO_free(t->in);
        BIO_free(t->out);
        goto fail;
    }
    /* an empty input BIO means "wait for more", not end of stream */
    BIO_set_mem_eof_return(t->in, -1);
    SSL_set_bio(t->ssl, t->in, t->out); /* the SSL owns both from here */
    SSL_set_accept_state(t->ssl);
    t->first = -1;
    return t;
fail:
    ERR_clear_error();
    SSL_free(t->ssl);
    free(t);
    return NULL;
}

void tdm_tls_free(tdm_tls *t)
{
    if (!t) return;
    SSL_free(t->ssl);
    free(t);
}

int tdm_tls_feed(tdm_tls *t, const void *p, size_t n)
{
    if (n > (size_t)INT32_MAX) return TDM_ERANGE;
    if (t->first < 0 && n > 0) t->first = *(const uint8_t *)p;
    return BIO_write(t->in, p, (int)n) == (int)n ? 0 : TDM_ENOMEM;
}

long tdm_tls_read(tdm_tls *t, void *buf, size_t cap)
{
    size_t got = 0;
    ERR_clear_error();
    int rc = SSL_read_ex(t->ssl, buf, cap, &got);
    if (rc == 1) return (long)got;
    switch (SSL_get_error(t->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: /* memory BIO: cannot happen, the output grows */
        return TDM_TLS_AGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return TDM_TLS_CLOSED;
    default: {
        long v = SSL_get_verify_result(t->ssl); /* X509_V_OK unless a client certificate failed */
        char why[200];
        take_reason(why, sizeof why, "TLS failure");
        if (v != X509_V_OK)
            snprintf(t->err, sizeof t->err, "%s (client certificate: %s)", why, X509_verify_cert_error_string(v));
        else
            snprintf(t->err, sizeof t->err, "%s", why);
        return TDM_TLS_FAILED;
    }
    }
}

int tdm_tls_ready(const tdm_tls *t) { return SSL_is_init_finished(t->ssl); }

int tdm_tls_peer_is_plain(const tdm_tls *t) { return t->first >= 0 && t->first != 0x16 && !tdm_tls_ready(t); }

size_t tdm_tls_seal_bound(const tdm_tls *t, size_t n)
{
    return BIO_ctrl_pending(t->out) + n + (n / TDM_TLS_RECORD + 1) * TDM_TLS_RECORD_OVERHEAD;
}

int tdm_tls_seal(tdm_tls *t, const void *p, size_t n, void *dst, size_t cap, size_t *len)
{
    *len = 0;
    if (!SSL_is_init_finished(t->ssl)) return TDM_EINVAL;
    uint8_t *out = dst;
    size_t w = tdm_tls_take(t, out, cap); /* what was waiting comes first */
    ERR_clear_error();
    for (size_t off = 0; off < n;) {
        size_t chunk = n - off < TDM_TLS_RECORD ? n - off : TDM_TLS_RECORD, done = 0;
        if (SSL_write_ex(t->ssl, (const uint8_t *)p + off, chunk, &done) != 1 || done != chunk ||
            tdm_tls_pending(t) > cap - w) {
            ERR_clear_error();
            return TDM_ENOMEM;
        }
        w += tdm_tls_take(t, out + w, cap - w);
        off += chunk;
    }
    *len = w;
    return 0;
}

void tdm_tls_close_notify(tdm_tls *t)
{
    if (!SSL_is_init_finished(t->ssl)) return;
    SSL_shutdown(t->ssl);
    ERR_clear_error();
}

size_t tdm_tls_pending(const tdm_tls *t) { return BIO_ctrl_pending(t->out); }

size_t tdm_tls_take(tdm_tls *t, void *dst, size_t n)
{
    size_t got = 0;
    if (n == 0 || BIO_read_ex(t->out, dst, n, &got) != 1) return 0;
    return got;
}

const char *tdm_tls_error(const tdm_tls *t) { return t->err; }

void tdm_tls_warn_failure(unsigned long long conn_id, const char *peer, int handshake, const char *why)
{
    const char *stage = handshake ? "TLS handshake failed" : "TLS error";
    static uint64_t window_start;
    static unsigned in_window;
    static unsigned long long suppressed;
    uint64_t now = (uint64_t)time(NULL);
    if (now != window_start) {
        window_start = now;
        in_window = 0;
    }
    if (in_window >= TDM_TLS_WARN_PER_S) {
        suppressed++;
        return;
    }
    in_window++;
    char safe[256];
    tdm_log_sanitize(why, strlen(why), safe, sizeof safe);
    if (suppressed)
        tdm_log_warn("conn %llu (%s): %s: %s; closing (%llu more TLS failures not logged)", conn_id, peer, stage,
                     safe, suppressed);
    else
        tdm_log_warn("conn %llu (%s): %s: %s; closing", conn_id, peer, stage, safe);
    suppressed = 0;
}
