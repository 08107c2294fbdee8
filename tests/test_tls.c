/* TLS between libtandem and tandemd (--tls-cert, tls://HOST:PORT): answers over TLS, the
 * token over it, and the clear errors of every mismatch (plain client on a TLS port, TLS
 * client on a plain one, a certificate that does not verify, a host it does not name).
 *
 * Certificates are made here with OpenSSL's API (an EC P-256 key, a self-signed X.509
 * with subjectAltName entries) in the test's temporary folder. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <tandem/adapters/libuv.h>
#include <tandem/tandem.h>

#include "daemon_util.h"
#include "gen.h"

static dmn D;
static char cert_path[300], key_path[300], other_cert[300], other_key[300], wrong_host_cert[300],
    wrong_host_key[300];

static void fini(void) { dmn_cleanup(&D); }

/* A self-signed certificate for the SAN list `san` (e.g. "IP:127.0.0.1,DNS:localhost")
 * and its key, written as PEM. */
static void make_cert(const char *san, const char *cert_file, const char *key_file)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    cr_assert_not_null(key, "EC key generation failed");
    X509 *x = X509_new();
    cr_assert_not_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(time(NULL) & 0x7fffffff));
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"tandem test", -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    const char *exts[][2] = {{"subjectAltName", san}, {"basicConstraints", "critical,CA:TRUE"},
                             {"keyUsage", "critical,digitalSignature,keyCertSign"}};
    for (size_t i = 0; i < 3; i++) {
        X509_EXTENSION *e = X509V3_EXT_conf(NULL, &v3, exts[i][0], exts[i][1]);
        cr_assert_not_null(e, "extension %s", exts[i][0]);
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    cr_assert(X509_sign(x, key, EVP_sha256()) > 0, "signing the certificate");
    FILE *f = fopen(cert_file, "w");
    cr_assert_not_null(f, "%s: %s", cert_file, strerror(errno));
    cr_assert_eq(PEM_write_X509(f, x), 1);
    fclose(f);
    f = fopen(key_file, "w");
    cr_assert_not_null(f, "%s: %s", key_file, strerror(errno));
    cr_assert_eq(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(key);
}

static void init(void)
{
    dmn_init(&D, "tls");
    snprintf(cert_path, sizeof cert_path, "%s/cert.pem", D.root);
    snprintf(key_path, sizeof key_path, "%s/key.pem", D.root);
    snprintf(other_cert, sizeof other_cert, "%s/other-cert.pem", D.root);
    snprintf(other_key, sizeof other_key, "%s/other-key.pem", D.root);
    snprintf(wrong_host_cert, sizeof wrong_host_cert, "%s/elsewhere-cert.pem", D.root);
    snprintf(wrong_host_key, sizeof wrong_host_key, "%s/elsewhere-key.pem", D.root);
    make_cert("IP:127.0.0.1,DNS:localhost", cert_path, key_path);
    make_cert("IP:127.0.0.1,DNS:localhost", other_cert, other_key); /* same names, another key */
    make_cert("DNS:elsewhere.example", wrong_host_cert, wrong_host_key);
    unsetenv("TANDEM_TLS_CA");
    unsetenv("TANDEM_TLS_CERT");
    unsetenv("TANDEM_TLS_KEY");
}

TestSuite(tls, .init = init, .fini = fini, .timeout = 120);

#define TOKEN "0123456789abcdef0123456789abcdef"

static void start_tls(const char *cert, const char *key, int with_token)
{
    const char *flags[] = {"--tls-cert", cert, "--tls-key", key, "--hello-timeout", "3",
                           with_token ? "--auth-token" : NULL, TOKEN, NULL};
    dmn_start(&D, flags);
}

/* "tls://127.0.0.1:PORT" or "tls://localhost:PORT" */
static const char *tls_addr(const char *host)
{
    static char a[96];
    snprintf(a, sizeof a, "tls://%s:%d", host, D.port);
    return a;
}

static tdm_client *connect_opts(const char *addr, const char *ca, const char *token)
{
    tdm_connect_opts o = {.addr = addr, .timeout_ms = 5000, .io_timeout_ms = 20000, .client_name = "test_tls",
                          .auth_token = token, .tls_ca_file = ca};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert_not_null(c);
    return c;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Two cubes of half-size 0.5, A fixed at the origin, B movable (translations only): the
 * poses below either overlap through faces that are never coplanar, or are apart. */
enum { N_POSES = 6 };
static const double poses[N_POSES][3] = {{0.9, 0.3, 0.2}, {1.2, 0, 0},     {0.9, 0.95, 0.7},
                                         {0.3, 1.5, 0},   {-0.7, -0.2, 0.45}, {0, 0, -1.05}};
static const uint32_t want_colliding[N_POSES] = {1, 0, 1, 0, 1, 0};

static void cube_scene(tdm_client *c, uint8_t scene_id[32])
{
    tdm_mesh *m = gen_box(0.5, 0.5, 0.5);
    cr_assert_not_null(m);
    uint8_t mid[32];
    cr_assert_eq(tdm_mesh_put(c, "cube", m->verts, m->n_verts, m->tris, m->n_tris, mid, NULL), 0, "%s",
                 tdm_client_errstr(c));
    tdm_scene_object o[2] = {{.object_id = 0}, {.object_id = 1, .movable = 1}};
    memcpy(o[0].mesh_id, mid, 32);
    memcpy(o[1].mesh_id, mid, 32);
    cr_assert_eq(tdm_scene_put(c, "cubes", o, 2, NULL, 0, scene_id, NULL, NULL, 0, NULL), 0, "%s",
                 tdm_client_errstr(c));
    tdm_mesh_free(m);
}

static void wire_poses(double *w)
{
    for (int i = 0; i < N_POSES; i++) {
        double p[7] = {poses[i][0], poses[i][1], poses[i][2], 0, 0, 0, 1};
        memcpy(w + 7 * i, p, sizeof p);
    }
}

static void check_answers(tdm_client *c, const uint8_t scene_id[32], const char *how)
{
    double w[N_POSES * 7];
    wire_poses(w);
    tdm_query_result res[N_POSES];
    cr_assert_eq(tdm_query(c, scene_id, TDM_QUERY_BOOL, w, 1, N_POSES, 0, res, NULL), 0, "%s: %s", how,
                 tdm_client_errstr(c));
    for (int i = 0; i < N_POSES; i++)
        cr_assert_eq(res[i].colliding, want_colliding[i], "%s: pose %d: colliding %u, want %u", how, i,
                     res[i].colliding, want_colliding[i]);
}

Test(tls, query_over_tls_and_the_unix_socket_stays_plain)
{
    start_tls(cert_path, key_path, 0);
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), 0, "TLS connect: %s", tdm_client_errstr(c));
    uint8_t sid[32];
    cube_scene(c, sid);
    check_answers(c, sid, "tls://127.0.0.1");
    /* many queries on one session: records keep flowing both ways */
    for (int k = 0; k < 50; k++) check_answers(c, sid, "tls://127.0.0.1, again");
    tdm_client_free(c);

    /* a host name, checked against the certificate's DNS entry; the CA from the environment */
    setenv("TANDEM_TLS_CA", cert_path, 1);
    c = connect_opts(tls_addr("localhost"), NULL, NULL);
    unsetenv("TANDEM_TLS_CA");
    cr_assert_eq(tdm_client_err(c), 0, "TLS connect to localhost: %s", tdm_client_errstr(c));
    check_answers(c, sid, "tls://localhost");
    tdm_client_free(c);

    /* the Unix socket speaks plain */
    c = connect_opts(D.unix_addr, NULL, NULL);
    cr_assert_eq(tdm_client_err(c), 0, "unix: %s", tdm_client_errstr(c));
    check_answers(c, sid, "unix socket");
    tdm_client_free(c);
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "(TLS)") != NULL, "the log does not say the TCP listener speaks TLS:\n%s", log);
    free(log);
}

Test(tls, plain_client_on_the_tls_port_gets_a_clear_error)
{
    start_tls(cert_path, key_path, 0);
    double t0 = now_s();
    tdm_client *c = connect_opts(D.tcp_addr, NULL, NULL);
    double took = now_s() - t0;
    cr_assert_neq(tdm_client_err(c), 0, "a plain Hello on the TLS port was answered");
    const char *e = tdm_client_errstr(c);
    cr_assert(strstr(e, "speaks TLS") && strstr(e, "tls://"), "unclear error: %s", e);
    cr_assert_lt(took, 2.0, "the plain client waited %.2f s (hello-timeout is 3 s): no answer came", took);
    tdm_client_free(c);
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "TLS handshake failed"), "no warn line for the failed handshake:\n%s", log);
    free(log);
}

Test(tls, tls_client_on_a_plain_port_gets_a_clear_error)
{
    dmn_start(&D, NULL);
    char addr[96];
    snprintf(addr, sizeof addr, "tls://%s", D.tcp_addr);
    tdm_client *c = connect_opts(addr, cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ECONNECT, "err %d: %s", tdm_client_err(c), tdm_client_errstr(c));
    const char *e = tdm_client_errstr(c);
    cr_assert(strstr(e, "TLS handshake with 127.0.0.1"), "unclear error: %s", e);
    tdm_client_free(c);
}

Test(tls, certificate_that_does_not_verify_is_refused)
{
    start_tls(cert_path, key_path, 0);
    /* signed by a key the client does not trust */
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), other_cert, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ECONNECT, "err %d: %s", tdm_client_err(c), tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "did not verify"), "unclear error: %s", tdm_client_errstr(c));
    tdm_client_free(c);
    /* the system store knows nothing of a self-signed test certificate */
    c = connect_opts(tls_addr("127.0.0.1"), NULL, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ECONNECT, "err %d: %s", tdm_client_err(c), tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "did not verify"), "unclear error: %s", tdm_client_errstr(c));
    tdm_client_free(c);
    /* a CA file that is not there */
    char missing[400];
    snprintf(missing, sizeof missing, "%s/no-such-ca.pem", D.root);
    c = connect_opts(tls_addr("127.0.0.1"), missing, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_EINVAL, "err %d: %s", tdm_client_err(c), tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "no-such-ca.pem"), "the error does not name the file: %s",
              tdm_client_errstr(c));
    tdm_client_free(c);
    /* the daemon is unharmed */
    c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
}

Test(tls, certificate_for_another_host_is_refused)
{
    start_tls(wrong_host_cert, wrong_host_key, 0);
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), wrong_host_cert, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ECONNECT, "err %d: %s", tdm_client_err(c), tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "did not verify") && strstr(tdm_client_errstr(c), "mismatch"),
              "unclear error: %s", tdm_client_errstr(c));
    tdm_client_free(c);
    c = connect_opts(tls_addr("localhost"), wrong_host_cert, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ECONNECT, "err %d: %s", tdm_client_err(c), tdm_client_errstr(c));
    tdm_client_free(c);
}

Test(tls, token_travels_over_tls)
{
    start_tls(cert_path, key_path, 1);
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), cert_path, "this-is-not-the-token-at-all");
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ESERVER, "a wrong token: err %d: %s", tdm_client_err(c),
                 tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "unauthenticated"), "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    c = connect_opts(tls_addr("127.0.0.1"), cert_path, TOKEN);
    cr_assert_eq(tdm_client_err(c), 0, "the right token: %s", tdm_client_errstr(c));
    uint8_t sid[32];
    cube_scene(c, sid);
    check_answers(c, sid, "with the token");
    tdm_client_free(c);
}

/* Frames larger than the staging buffer (a mesh of ~2 MB, many TLS records), and pipelined
 * queries past max-pipelined, so that decrypting stops with the connection paused and goes
 * on when it resumes. */
Test(tls, large_frames_and_back_pressure_over_tls)
{
    const char *flags[] = {"--tls-cert", cert_path, "--tls-key", key_path, "--max-pipelined", "2", NULL};
    dmn_start(&D, flags);
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    tdm_mesh *big = gen_sphere(1.0, 300);
    cr_assert_not_null(big);
    size_t bytes = (size_t)big->n_verts * 12 + (size_t)big->n_tris * 12;
    cr_assert_gt(bytes, 1u << 20, "the mesh is too small to need many records (%zu bytes)", bytes);
    uint8_t id[32], want[32];
    cr_assert_eq(tdm_mesh_put(c, "big", big->verts, big->n_verts, big->tris, big->n_tris, id, NULL), 0, "%s",
                 tdm_client_errstr(c));
    canon_mesh_id(big->verts, big->n_verts, big->tris, big->n_tris, want);
    cr_assert(!memcmp(id, want, 32), "the large mesh's id is not its canonical SHA-256: bytes changed on the way");
    tdm_mesh_free(big);

    uint8_t sid[32];
    cube_scene(c, sid);
    enum { K = 24 };
    double w[N_POSES * 7];
    wire_poses(w);
    tdm_query_result res[K][N_POSES];
    uint64_t ids[K];
    for (int k = 0; k < K; k++)
        cr_assert_eq(tdm_query_send(c, sid, TDM_QUERY_BOOL, w, 1, N_POSES, 0, res[k], NULL, &ids[k]), 0, "send %d: %s",
                     k, tdm_client_errstr(c));
    int seen[K] = {0};
    for (int k = 0; k < K; k++) {
        uint64_t got;
        int status;
        cr_assert_eq(tdm_query_wait(c, &got, &status), 0, "%s", tdm_client_errstr(c));
        cr_assert_eq(status, 0, "query %llu: %s", (unsigned long long)got, tdm_client_errstr(c));
        int j = -1;
        for (int i = 0; i < K; i++)
            if (ids[i] == got) j = i;
        cr_assert(j >= 0 && !seen[j], "id %llu handed back twice or never sent", (unsigned long long)got);
        seen[j] = 1;
        for (int i = 0; i < N_POSES; i++)
            cr_assert_eq(res[j][i].colliding, want_colliding[i], "batch %d pose %d", j, i);
    }
    tdm_client_free(c);
}

/* --tls-ca: the client must show a certificate that chains to it ($TANDEM_TLS_CERT/KEY). */
Test(tls, client_certificates_with_tls_ca)
{
    const char *flags[] = {"--tls-cert", cert_path, "--tls-key", key_path, "--tls-ca", other_cert, NULL};
    dmn_start(&D, flags);
    /* none: refused */
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_neq(tdm_client_err(c), 0, "a client without a certificate was served");
    cr_assert(strstr(tdm_client_errstr(c), "certificate required"), "unclear error: %s", tdm_client_errstr(c));
    tdm_client_free(c);
    /* one the server's CA did not sign: refused */
    setenv("TANDEM_TLS_CERT", cert_path, 1);
    setenv("TANDEM_TLS_KEY", key_path, 1);
    c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_neq(tdm_client_err(c), 0, "a client with a foreign certificate was served");
    tdm_client_free(c);
    /* the right one */
    setenv("TANDEM_TLS_CERT", other_cert, 1);
    setenv("TANDEM_TLS_KEY", other_key, 1);
    c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    uint8_t sid[32];
    cube_scene(c, sid);
    check_answers(c, sid, "mutual TLS");
    tdm_client_free(c);
    /* a key file that is not there: the error names it */
    setenv("TANDEM_TLS_KEY", "/nonexistent/key.pem", 1);
    c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_EINVAL, "%s", tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "/nonexistent/key.pem"), "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    unsetenv("TANDEM_TLS_CERT");
    unsetenv("TANDEM_TLS_KEY");
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "TLS handshake failed") || strstr(log, "TLS error"), "no warn line:\n%s", log);
    free(log);
}

Test(tls, handshake_counts_against_the_hello_timeout)
{
    start_tls(cert_path, key_path, 0);
    int fd = raw_connect(D.tcp_addr); /* connects, then says nothing */
    cr_assert_geq(fd, 0);
    double t0 = now_s();
    int rc = raw_wait_eof(fd, 10000);
    double took = now_s() - t0;
    close(fd);
    cr_assert_eq(rc, RAW_EOF, "the silent connection was not closed (%d)", rc);
    cr_assert(took > 2.0 && took < 6.0, "closed after %.2f s; hello-timeout is 3 s", took);
}

Test(tls, start_up_errors_name_the_file)
{
    const char *no_key[] = {"--tls-cert", cert_path, NULL};
    int st;
    cr_assert_eq(dmn_try_start(&D, no_key, &st), -1, "started with a certificate and no key");
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "tls-key is not"), "%s", log);
    free(log);
    char missing[400];
    snprintf(missing, sizeof missing, "%s/missing.pem", D.root);
    const char *bad_cert[] = {"--tls-cert", missing, "--tls-key", key_path, NULL};
    cr_assert_eq(dmn_try_start(&D, bad_cert, &st), -1, "started with a missing certificate");
    log = dmn_log(&D);
    cr_assert(strstr(log, "tls-cert") && strstr(log, "missing.pem"), "%s", log);
    free(log);
    const char *mismatch[] = {"--tls-cert", cert_path, "--tls-key", other_key, NULL};
    cr_assert_eq(dmn_try_start(&D, mismatch, &st), -1, "started with a key of another certificate");
    log = dmn_log(&D);
    cr_assert(strstr(log, "tls-key") && strstr(log, "mismatch"), "%s", log);
    free(log);
}

/* ---- the async client over TLS --------------------------------------------------------------- */

typedef struct async_run {
    uint8_t scene_id[32];
    int connected, answered, failed;
    uint32_t colliding[N_POSES];
    char why[512];
} async_run;

static void on_query(tdm_async *ac, const tdm_reply *r, void *priv)
{
    async_run *s = priv;
    if (r->status != 0 || r->u.query.n != N_POSES) {
        s->failed = 1;
        snprintf(s->why, sizeof s->why, "query: status %d: %s", r->status, r->error.message);
    } else {
        for (int i = 0; i < N_POSES; i++) s->colliding[i] = r->u.query.results[i].colliding;
        s->answered = 1;
    }
    tdm_async_disconnect(ac);
}

static void on_connect(tdm_async *ac, int status)
{
    async_run *s = tdm_async_data(ac);
    if (status != 0) {
        s->failed = 1;
        snprintf(s->why, sizeof s->why, "connect: %d: %s", status, tdm_async_errstr(ac));
        return;
    }
    s->connected = 1;
    static double w[N_POSES * 7];
    wire_poses(w);
    int rc = tdm_async_query(ac, on_query, s, s->scene_id, TDM_QUERY_BOOL, w, 1, N_POSES, 0, 0, NULL);
    if (rc) {
        s->failed = 1;
        snprintf(s->why, sizeof s->why, "tdm_async_query: %d", rc);
        tdm_async_disconnect(ac);
    }
}

static void run_async(const char *addr, const char *ca, async_run *s)
{
    uv_loop_t loop;
    cr_assert_eq(uv_loop_init(&loop), 0);
    tdm_connect_opts o = {.addr = addr, .client_name = "test_tls async", .tls_ca_file = ca};
    tdm_async *ac = tdm_async_connect(&o);
    cr_assert_not_null(ac);
    if (tdm_async_err(ac)) {
        s->failed = 1;
        snprintf(s->why, sizeof s->why, "%s", tdm_async_errstr(ac));
        tdm_async_free(ac);
    } else {
        tdm_async_set_data(ac, s);
        tdm_async_set_connect_cb(ac, on_connect);
        cr_assert_eq(tdm_libuv_attach(ac, &loop), 0);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(tls, async_client_over_tls)
{
    start_tls(cert_path, key_path, 0);
    async_run s = {0};
    tdm_client *c = connect_opts(tls_addr("127.0.0.1"), cert_path, NULL);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    cube_scene(c, s.scene_id);
    tdm_client_free(c);
    run_async(tls_addr("localhost"), cert_path, &s);
    cr_assert(s.connected && s.answered && !s.failed, "async over TLS: %s", s.why);
    for (int i = 0; i < N_POSES; i++)
        cr_assert_eq(s.colliding[i], want_colliding[i], "async: pose %d: colliding %u, want %u", i, s.colliding[i],
                     want_colliding[i]);
    /* a certificate the client does not trust: the connect callback says why */
    async_run bad = {0};
    run_async(tls_addr("127.0.0.1"), other_cert, &bad);
    cr_assert(bad.failed && !bad.connected, "async: an untrusted certificate was accepted");
    cr_assert(strstr(bad.why, "did not verify"), "async: unclear error: %s", bad.why);
}
