/* TLS on tandemd's TCP connections (--tls-cert, --tls-key, --tls-ca), over OpenSSL
 * memory BIOs: libuv moves the bytes, OpenSSL only transforms them.
 *
 * Each connection's SSL object reads ciphertext from one memory BIO (tdm_tls_feed puts
 * what the socket delivered there) and writes ciphertext into another (taken with
 * tdm_tls_take and written with uv_write by conn.c). Plaintext comes out of
 * tdm_tls_read straight into the connection's framing buffers and goes in through
 * tdm_tls_seal, one reply frame at a time. Nothing here touches a socket or a libuv
 * handle, so conn.c keeps its one read path and one write path.
 *
 * Bounds: conn.c feeds one socket read (TDM_TLS_READ_CAP bytes at most) and decrypts
 * it all before reading again, and stops reading while the connection is paused, so
 * the input BIO holds one read and a partial record at most; the output BIO holds one
 * record at most (tdm_tls_seal) and is emptied after every call that may fill it. OpenSSL's own buffers (~34 KiB a connection) are
 * released while idle (SSL_MODE_RELEASE_BUFFERS).
 *
 * Thread: the loop's only (the context is read-only once made, and may be shared). */
#ifndef TDM_DAEMON_TLS_H
#define TDM_DAEMON_TLS_H

#include <stddef.h>
#include <stdint.h>

/* Ciphertext taken from the socket in one read: a TLS record and then some. */
#define TDM_TLS_READ_CAP (32u << 10)
/* Plaintext per record when sealing (TLS's maximum) and a bound on a record's overhead. */
#define TDM_TLS_RECORD (16u << 10)
#define TDM_TLS_RECORD_OVERHEAD 256u

typedef struct tdm_tls_ctx tdm_tls_ctx;
typedef struct tdm_tls tdm_tls;

/* The server's context: certificate chain and key (PEM files), TLS 1.2 at least (1.3
 * preferred, OpenSSL's default ciphers), no renegotiation; with ca_file (NULL or ""
 * for none) a client certificate signed by it is required. Returns 0, or TDM_EIO with a
 * message naming the file and OpenSSL's reason in err. */
int tdm_tls_ctx_new(const char *cert_file, const char *key_file, const char *ca_file, tdm_tls_ctx **out, char *err,
                    size_t errlen);
void tdm_tls_ctx_free(tdm_tls_ctx *ctx);

/* A server-side session for one accepted connection; NULL when out of memory. */
tdm_tls *tdm_tls_new(tdm_tls_ctx *ctx);
void tdm_tls_free(tdm_tls *t);

/* Ciphertext received from the peer (copied). 0, or TDM_ENOMEM. */
int tdm_tls_feed(tdm_tls *t, const void *p, size_t n);

/* Decrypts into buf (cap > 0 bytes), driving the handshake first. Returns the number of
 * plaintext bytes (> 0), TDM_TLS_AGAIN (needs more ciphertext), TDM_TLS_CLOSED (the peer
 * sent close_notify), or TDM_TLS_FAILED (a handshake or record error: tdm_tls_error
 * says why). Ciphertext to send may be waiting afterwards either way (tdm_tls_take). */
enum { TDM_TLS_AGAIN = 0, TDM_TLS_CLOSED = -1, TDM_TLS_FAILED = -2 };
long tdm_tls_read(tdm_tls *t, void *buf, size_t cap);

/* 1 once the handshake is done (replies may then be sealed). */
int tdm_tls_ready(const tdm_tls *t);
/* 1 when the peer's first byte cannot start a TLS handshake record (0x16) and the handshake
 * is not done: a plain client, which is better told so in its own protocol. */
int tdm_tls_peer_is_plain(const tdm_tls *t);

/* Room tdm_tls_seal needs for n plaintext bytes: the ciphertext already waiting, then
 * records of at most 16 KiB, each with its header, tag and padding. */
size_t tdm_tls_seal_bound(const tdm_tls *t, size_t n);
/* Encrypts n plaintext bytes into dst (cap from tdm_tls_seal_bound), after the ciphertext
 * already waiting; *len: the bytes written. One record at a time goes through the output
 * BIO, so that it never holds more than a record (a memory BIO keeps its largest size).
 * 0, TDM_EINVAL (the handshake is not done) or TDM_ENOMEM. */
int tdm_tls_seal(tdm_tls *t, const void *p, size_t n, void *dst, size_t cap, size_t *len);
/* Queues close_notify in the output BIO (for a clean end before our FIN). */
void tdm_tls_close_notify(tdm_tls *t);

/* Ciphertext waiting to be sent, in bytes. */
size_t tdm_tls_pending(const tdm_tls *t);
/* Moves up to n bytes of it into dst; returns how many. */
size_t tdm_tls_take(tdm_tls *t, void *dst, size_t n);

/* Why the last TDM_TLS_FAILED happened: OpenSSL's reason, and for a client certificate
 * that did not verify, the verifier's. Owned by t. */
const char *tdm_tls_error(const tdm_tls *t);

/* A TLS failure's warn line (handshake: it happened before tdm_tls_ready), at most
 * TDM_TLS_WARN_PER_S a second, so that a scanner cannot flood the log; the lines
 * suppressed are counted in the next one. Loop thread. */
#define TDM_TLS_WARN_PER_S 10
void tdm_tls_warn_failure(unsigned long long conn_id, const char *peer, int handshake, const char *why);

#endif
