/* TLS for tls://HOST:PORT addresses: an OpenSSL session on the client's non-blocking
 * socket, and recv/send stand-ins that go through it when there is one.
 *
 * The socket BIO is our own (a few lines over recv and send), because OpenSSL's writes
 * with write(2): a server that went away would raise SIGPIPE in the application, where
 * the plain client's send(MSG_NOSIGNAL) gets EPIPE. */
#define _GNU_SOURCE /* MSG_NOSIGNAL */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "internal.h"

struct tdm__tls {
    SSL_CTX *ctx;
    SSL *ssl;
    char host[256];
    char err[512];
};

/* ---- the socket BIO ---------------------------------------------------------------------- */

static BIO_METHOD *sock_method;
static pthread_once_t sock_once = PTHREAD_ONCE_INIT;

static int sock_fd(BIO *b) { return (int)(intptr_t)BIO_get_data(b); }

static int sock_write(BIO *b, const char *data, size_t n, size_t *done)
{
    BIO_clear_retry_flags(b);
    for (;;) {
        ssize_t w = send(sock_fd(b), data, n, MSG_NOSIGNAL);
        if (w >= 0) {
            *done = (size_t)w;
            return 1;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
        return 0;
    }
}

static int sock_read(BIO *b, char *data, size_t n, size_t *done)
{
    BIO_clear_retry_flags(b);
    for (;;) {
        ssize_t r = recv(sock_fd(b), data, n, 0);
        if (r > 0) {
            *done = (size_t)r;
            return 1;
        }
        if (r == 0) return 0; /* end of stream: no retry flag */
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(b);
        return 0;
    }
}

static long sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0; /* nothing is buffered here */
}

static int sock_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void make_sock_method(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tandem socket");
    if (!m) return;
    BIO_meth_set_write_ex(m, sock_write);
    BIO_meth_set_read_ex(m, sock_read);
    BIO_meth_set_ctrl(m, sock_ctrl);
    BIO_meth_set_create(m, sock_create);
    sock_method = m;
}

/* ---- sessions ------------------------------------------------------------------------------ */

int tdm__tls_scheme(const char *addr, const char **rest)
{
    if (addr && !strncmp(addr, "tls://", 6)) {
        *rest = addr + 6;
        return 1;
    }
    *rest = addr;
    return 0;
}

/* OpenSSL's reason for the oldest queued error (or fallback); clears the queue. */
static const char *reason(char *buf, size_t cap, const char *fallback)
{
    unsigned long e = ERR_peek_error();
    const char *r = !e ? NULL : ERR_SYSTEM_ERROR(e) ? strerror(ERR_GET_REASON(e)) : ERR_reason_error_string(e);
    snprintf(buf, cap, "%s", r ? r : fallback);
    ERR_clear_error();
    return buf;
}

int tdm__tls_new(int fd, const char *addr, const char *ca_file, tdm__tls **out, char *err, size_t errlen)
{
    *out = NULL;
    char port[16], why[256];
    tdm__tls *t = calloc(1, sizeof *t);
    if (!t) goto nomem;
    if (!strncmp(addr, "unix:", 5)) {
        tdm__fmt(err, errlen, "tls://%s: TLS is for TCP addresses (tls://HOST:PORT); Unix sockets are plain", addr);
        free(t);
        return TDM_CLIENT_EADDR;
    }
    if (tdm__net_split(addr, t->host, sizeof t->host, port, sizeof port) < 0) {
        tdm__fmt(err, errlen, "'tls://%s' is not tls://host:port or tls://[v6]:port", addr);
        free(t);
        return TDM_CLIENT_EADDR;
    }
    pthread_once(&sock_once, make_sock_method);
    ERR_clear_error();
    if (!sock_method || !(t->ctx = SSL_CTX_new(TLS_client_method()))) goto nomem;
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    /* the framing's lengths catch a cut stream; a close without close_notify is an end */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    /* SSL_write behaves as send: partial writes, the buffer may move between retries */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if (!ca_file || !*ca_file) ca_file = getenv("TANDEM_TLS_CA");
    if (ca_file && *ca_file) {
        if (SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1) {
            tdm__fmt(err, errlen, "TLS CA file %s: %s", ca_file, reason(why, sizeof why, "cannot be read"));
            tdm__tls_free(t);
            return TDM_CLIENT_EINVAL;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        tdm__fmt(err, errlen, "TLS: the system's CA certificates: %s", reason(why, sizeof why, "cannot be read"));
        tdm__tls_free(t);
        return TDM_CLIENT_EINVAL;
    }
    /* a client certificate, for a tandemd with --tls-ca (mutual TLS) */
    const char *cert = getenv("TANDEM_TLS_CERT"), *key = getenv("TANDEM_TLS_KEY");
    if (cert && *cert) {
        if (!key || !*key) key = cert; /* both in one PEM file */
        const char *bad = SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1      ? cert
                          : SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1 ? key
                                                                                           : NULL;
        if (bad) {
            tdm__fmt(err, errlen, "TLS client certificate ($TANDEM_TLS_CERT, $TANDEM_TLS_KEY) %s: %s", bad,
                     reason(why, sizeof why, "cannot be read"));
            tdm__tls_free(t);
            return TDM_CLIENT_EINVAL;
        }
    }
    if (!(t->ssl = SSL_new(t->ctx))) goto nomem;
    BIO *b = BIO_new(sock_method);
    if (!b) goto nomem;
    BIO_set_data(b, (void *)(intptr_t)fd);
    SSL_set_bio(t->ssl, b, b);
    /* the name checked in the certificate: an IP address against its IP entries, a host
     * name against its DNS entries (and sent as SNI) */
    unsigned char ip[16];
    int is_ip = inet_pton(AF_INET, t->host, ip) == 1 || inet_pton(AF_INET6, t->host, ip) == 1;
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), t->host)
                   : SSL_set1_host(t->ssl, t->host) && SSL_set_tlsext_host_name(t->ssl, t->host);
    if (!ok) goto nomem;
    SSL_set_connect_state(t->ssl);
    *out = t;
    return 0;
nomem:
    ERR_clear_error();
    tdm__tls_free(t);
    tdm__fmt(err, errlen, "out of memory");
    return TDM_CLIENT_ENOMEM;
}

void tdm__tls_free(tdm__tls *t)
{
    if (!t) return;
    SSL_free(t->ssl);
    SSL_CTX_free(t->ctx);
    free(t);
}

const char *tdm__tls_errstr(const tdm__tls *t) { return t ? t->err : ""; }

int tdm__tls_handshake(tdm__tls *t, char *err, size_t errlen)
{
    ERR_clear_error();
    errno = 0;
    int rc = SSL_do_handshake(t->ssl);
    if (rc == 1) return 0;
    int e = SSL_get_error(t->ssl, rc);
    if (e == SSL_ERROR_WANT_READ) return TDM__TLS_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE) return TDM__TLS_WANT_WRITE;
    char why[256];
    long v = SSL_get_verify_result(t->ssl);
    if (e == SSL_ERROR_SSL && v != X509_V_OK) {
        ERR_clear_error();
        tdm__fmt(err, errlen, "TLS: the certificate of %s did not verify: %s (the CA comes from the connect "
                 "options' tls_ca_file, else $TANDEM_TLS_CA, else the system's store)", t->host,
                 X509_verify_cert_error_string(v));
        return TDM_CLIENT_ECONNECT;
    }
    if (e == SSL_ERROR_SSL) {
        reason(why, sizeof why, "failure");
        tdm__fmt(err, errlen, "TLS handshake with %s failed: %s%s", t->host, why,
                 strstr(why, "wrong version number") || strstr(why, "packet length too long")
                     ? " (the server does not speak TLS there: a plain tandemd takes HOST:PORT without tls://)"
                     : "");
        return TDM_CLIENT_ECONNECT;
    }
    ERR_clear_error();
    if (errno && errno != EPIPE && errno != ECONNRESET)
        tdm__fmt(err, errlen, "TLS handshake with %s: %s", t->host, strerror(errno));
    else
        tdm__fmt(err, errlen, "TLS handshake with %s: the server closed the connection (a plain tandemd, or a "
                 "server that refused the client?)", t->host);
    return TDM_CLIENT_ECONNECT;
}

int tdm__tls_handshake_wait(tdm__tls *t, int fd, double deadline, char *err, size_t errlen)
{
    for (;;) {
        int rc = tdm__tls_handshake(t, err, errlen);
        if (rc <= 0) return rc;
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - tdm__now_ms();
            if (left <= 0) {
                tdm__fmt(err, errlen, "TLS handshake with %s timed out", t->host);
                return TDM_CLIENT_ETIMEOUT;
            }
            ms = (int)left + 1;
        }
        struct pollfd p = {fd, rc == TDM__TLS_WANT_READ ? POLLIN : POLLOUT, 0};
        if (poll(&p, 1, ms) < 0 && errno != EINTR) {
            tdm__fmt(err, errlen, "poll: %s", strerror(errno));
            return TDM_CLIENT_EIO;
        }
    }
}

/* A failed SSL call as recv/send would say it: errno EAGAIN, 0 for an end (read), or
 * -1 with errno (EPROTO with t->err for a TLS error). */
static ssize_t io_error(tdm__tls *t, int rc, int reading)
{
    int saved = errno; /* the socket's, from our BIO */
    int e = SSL_get_error(t->ssl, rc);
    char why[256];
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        if (reading) return 0;
        errno = EPIPE;
        return -1;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        errno = saved ? saved : reading ? ECONNRESET : EPIPE;
        return -1;
    default:
        reason(why, sizeof why, "failure");
        tdm__fmt(t->err, sizeof t->err, "TLS: %s%s", why,
                 strstr(why, "certificate required") || strstr(why, "unknown ca") || strstr(why, "bad certificate")
                     ? " (the server asks for a client certificate it trusts: $TANDEM_TLS_CERT, $TANDEM_TLS_KEY)"
                     : "");
        errno = EPROTO;
        return -1;
    }
}

ssize_t tdm__io_recv(tdm__tls *t, int fd, void *buf, size_t n)
{
    if (!t) return recv(fd, buf, n, 0);
    /* everything that can be decrypted now, so that nothing waits inside OpenSSL while
     * the caller polls the socket */
    size_t total = 0;
    while (total < n) {
        size_t got = 0;
        ERR_clear_error();
        errno = 0;
        int rc = SSL_read_ex(t->ssl, (char *)buf + total, n - total, &got);
        if (rc == 1) {
            total += got;
            continue;
        }
        if (total > 0) { /* hand over what came; the next call sees the rest (or the error again) */
            ERR_clear_error();
            break;
        }
        return io_error(t, rc, 1);
    }
    return (ssize_t)total;
}

ssize_t tdm__io_send(tdm__tls *t, int fd, const void *buf, size_t n)
{
    if (!t) return send(fd, buf, n, MSG_NOSIGNAL);
    size_t done = 0;
    ERR_clear_error();
    errno = 0;
    int rc = SSL_write_ex(t->ssl, buf, n, &done);
    if (rc == 1) return (ssize_t)done;
    return io_error(t, rc, 0);
}

const char *tdm__io_strerror(const tdm__tls *t, int err)
{
    return t && err == EPROTO && t->err[0] ? t->err : strerror(err);
}
