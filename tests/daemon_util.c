#include "daemon_util.h"
#include "gen.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "geom/vec.h"

#ifndef TANDEMD_BIN
#error "TANDEMD_BIN (the path of the tandemd executable) must be defined by the build"
#endif

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                char sub[1024];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                remove_tree(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* ---- the daemon ------------------------------------------------------------------------ */

void dmn_init(dmn *d, const char *tag)
{
    memset(d, 0, sizeof *d);
    const char *tmp = getenv("TMPDIR");
    snprintf(d->root, sizeof d->root, "%s/tandemd-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    cr_assert_not_null(mkdtemp(d->root), "mkdtemp %s: %s", d->root, strerror(errno));
    snprintf(d->data_dir, sizeof d->data_dir, "%s/data", d->root);
    snprintf(d->sock_path, sizeof d->sock_path, "%s/tandemd.sock", d->root);
    snprintf(d->log_path, sizeof d->log_path, "%s/tandemd.log", d->root);
    snprintf(d->unix_addr, sizeof d->unix_addr, "unix:%s", d->sock_path);
}

/* A TCP port on 127.0.0.1 that was free a moment ago. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind: %s", strerror(errno));
    socklen_t sl = sizeof sa;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static int can_connect(const char *addr)
{
    int fd = raw_connect(addr);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* The last `max` bytes of the log, for failure messages (malloc'd). */
static char *log_tail(const dmn *d, size_t max)
{
    char *log = dmn_log(d);
    size_t n = strlen(log);
    if (n > max) memmove(log, log + n - max, max + 1);
    return log;
}

/* TANDEMD_BIN, or $TDM_TEST_TANDEMD when set (to run a suite against another build,
 * e.g. to see a test fail without the change it tests). */
static const char *tandemd_bin(void)
{
    const char *b = getenv("TDM_TEST_TANDEMD");
    return b && *b ? b : TANDEMD_BIN;
}

static pid_t spawn(dmn *d, const char *const *extra)
{
    const char *argv[64];
    int n = 0;
    char listen_unix[300];
    snprintf(listen_unix, sizeof listen_unix, "unix:%s", d->sock_path);
    argv[n++] = tandemd_bin();
    argv[n++] = "--data-dir";
    argv[n++] = d->data_dir;
    argv[n++] = "--listen";
    argv[n++] = d->tcp_addr;
    argv[n++] = "--listen";
    argv[n++] = listen_unix;
    argv[n++] = "--threads";
    argv[n++] = "2";
    /* the suites start daemons in parallel: each takes a bounded share of a GPU, not the
       default 80 % of it (a second daemon's calibration then found no device memory) */
    argv[n++] = "--gpu-memory";
    argv[n++] = "2147483648";
    /* TDM_TEST_IO_THREADS=N: every daemon with N I/O threads (io.h), unless the test says */
    const char *io = getenv("TDM_TEST_IO_THREADS");
    if (io && *io) {
        argv[n++] = "--io-threads";
        argv[n++] = io;
    }
    /* TDM_TEST_REPLY_THREADS=N: every daemon's replies written by N reply threads (query_pool.h),
       unless the test says */
    const char *rt = getenv("TDM_TEST_REPLY_THREADS");
    if (rt && *rt) {
        argv[n++] = "--reply-threads";
        argv[n++] = rt;
    }
    /* TDM_TEST_LOOP_SPIN_US, TDM_TEST_RING_PARK_US: every daemon's loops polling that long, its idle
       rings parked after that long (io.c, conn.h "Rings"), unless the test says */
    const char *ls = getenv("TDM_TEST_LOOP_SPIN_US");
    if (ls && *ls) {
        argv[n++] = "--loop-spin-us";
        argv[n++] = ls;
    }
    const char *rp = getenv("TDM_TEST_RING_PARK_US");
    if (rp && *rp) {
        argv[n++] = "--ring-park-us";
        argv[n++] = rp;
    }
    for (; extra && *extra; extra++) {
        cr_assert(n < 62, "too many flags");
        argv[n++] = *extra;
    }
    argv[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* the daemon dies with the test process, whatever becomes of it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        int in = open("/dev/null", O_RDONLY);
        int log = open(d->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in < 0 || log < 0) _exit(127);
        dup2(in, 0);
        dup2(log, 1);
        dup2(log, 2);
        /* the test's own sockets must not live on in the daemon */
        for (int fd = 3; fd < 4096; fd++) close(fd);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int start(dmn *d, const char *const *extra, int *exit_status)
{
    cr_assert(d->root[0], "dmn_init first");
    cr_assert_eq(d->pid, 0, "tandemd is already running");
    for (int attempt = 0;; attempt++) {
        d->port = d->fixed_port ? d->fixed_port : free_port();
        snprintf(d->tcp_addr, sizeof d->tcp_addr, "127.0.0.1:%d", d->port);
        size_t log_start = 0;
        char *before = gen_read_file(d->log_path, &log_start);
        free(before);
        d->pid = spawn(d, extra);
        double t0 = now_s();
        for (;;) {
            int st;
            if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
                d->pid = 0;
                char *log = dmn_log(d);
                int port_taken = strstr(log + log_start, "address already in use") != NULL;
                free(log);
                if (port_taken && attempt < 5) break; /* someone took the port: another one */
                if (exit_status) {
                    *exit_status = st;
                    return -1;
                }
                char *tail = log_tail(d, 3000);
                cr_assert(0, "tandemd exited during startup (status %d); its log:\n%s", st, tail);
            }
            if (can_connect(d->tcp_addr) && can_connect(d->unix_addr)) {
                /* both accept; the log says ready once listening is done (it precedes the loop) */
                char *log = dmn_log(d);
                int ready = strstr(log + log_start, " ready\n") != NULL;
                free(log);
                if (ready && dmn_running(d)) return 0;
            }
            if (now_s() - t0 > 60) { /* the GPU engine calibrates at start-up */
                char *tail = log_tail(d, 3000);
                dmn_stop(d, SIGKILL);
                cr_assert(0, "tandemd did not accept connections within 60 s; its log:\n%s", tail);
            }
            sleep_ms(10);
        }
    }
}

void dmn_start(dmn *d, const char *const *extra) { start(d, extra, NULL); }

void dmn_spawn(dmn *d, const char *const *extra)
{
    cr_assert(d->root[0], "dmn_init first");
    cr_assert_eq(d->pid, 0, "tandemd is already running");
    d->port = free_port();
    snprintf(d->tcp_addr, sizeof d->tcp_addr, "127.0.0.1:%d", d->port);
    d->pid = spawn(d, extra);
}

int dmn_try_start(dmn *d, const char *const *extra, int *exit_status)
{
    int st = 0;
    int rc = start(d, extra, &st);
    if (exit_status) *exit_status = st;
    return rc;
}

int dmn_running(dmn *d)
{
    if (d->pid <= 0) return 0;
    int st;
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) {
        d->pid = 0;
        return 0;
    }
    return r == 0;
}

int dmn_stop(dmn *d, int sig)
{
    if (d->pid <= 0) return -1;
    kill(d->pid, sig);
    int st = -1;
    while (waitpid(d->pid, &st, 0) < 0 && errno == EINTR) {
    }
    d->pid = 0;
    return st;
}

int dmn_count_files(const dmn *d, const char *sub)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", d->data_dir, sub);
    DIR *dir = opendir(p);
    if (!dir) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.') n++;
    closedir(dir);
    return n;
}

void dmn_cleanup(dmn *d)
{
    if (d->pid > 0) dmn_stop(d, SIGKILL);
    if (d->root[0]) remove_tree(d->root);
    d->root[0] = 0;
}

char *dmn_log(const dmn *d)
{
    char *s = gen_read_file(d->log_path, NULL);
    if (!s) {
        s = malloc(1);
        s[0] = 0;
    }
    return s;
}

/* ---- raw protocol ------------------------------------------------------------------------ */

int raw_connect(const char *addr)
{
    int fd;
    if (!strncmp(addr, "unix:", 5)) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(addr + 5) >= sizeof sa.sun_path) return -1;
        strcpy(sa.sun_path, addr + 5);
        if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) return -1;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fd);
            return -1;
        }
        return fd;
    }
    const char *colon = strrchr(addr, ':');
    if (!colon) return -1;
    char host[64];
    size_t hl = (size_t)(colon - addr);
    if (hl >= sizeof host) return -1;
    memcpy(host, addr, hl);
    host[hl] = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int raw_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int raw_send_frame(int fd, const void *body, uint32_t len)
{
    uint8_t *buf = malloc(4 + (size_t)len);
    if (!buf) return -1;
    buf[0] = (uint8_t)(len >> 24);
    buf[1] = (uint8_t)(len >> 16);
    buf[2] = (uint8_t)(len >> 8);
    buf[3] = (uint8_t)len;
    if (len) memcpy(buf + 4, body, len);
    int rc = raw_write_all(fd, buf, 4 + (size_t)len); /* one write: the frame arrives whole */
    free(buf);
    return rc;
}

uint8_t *raw_pack(const Tandem__V1__Request *rq, size_t *len)
{
    size_t n = tandem__v1__request__get_packed_size(rq);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return NULL;
    *len = tandem__v1__request__pack(rq, buf);
    return buf;
}

int raw_send(int fd, const Tandem__V1__Request *rq)
{
    size_t n;
    uint8_t *buf = raw_pack(rq, &n);
    if (!buf) return -1;
    int rc = raw_send_frame(fd, buf, (uint32_t)n);
    free(buf);
    return rc;
}

/* Reads exactly n bytes before the deadline. Returns n, 0..n-1 when the peer closed
 * after that many, -1 on timeout, -2 on error, -3 when descriptors' control data was cut
 * short (MSG_CTRUNC). With fds (recvmsg): the descriptors that come with the bytes (SCM_RIGHTS),
 * the first kept in fds->first, every one counted in fds->n, the others closed. */
typedef struct fd_catch {
    int first, n;
} fd_catch;

static ssize_t read_full_fds(int fd, uint8_t *p, size_t n, double deadline, fd_catch *fds)
{
    size_t got = 0;
    while (got < n) {
        int left = (int)((deadline - now_s()) * 1000);
        if (left < 0) return -1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) return -2;
        if (pr == 0) return -1;
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        struct iovec iov = {.iov_base = p + got, .iov_len = n - got};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fds) mh.msg_control = ctl.buf, mh.msg_controllen = sizeof ctl.buf;
        ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == ECONNRESET) return (ssize_t)got;
            return -2;
        }
        for (struct cmsghdr *cm = fds ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int x;
                memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof x);
                fds->n++;
                if (fds->first < 0) fds->first = x;
                else close(x);
            }
        }
        if (fds && (mh.msg_flags & MSG_CTRUNC)) return -3;
        if (r == 0) return (ssize_t)got;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int raw_recv(int fd, int timeout_ms, Tandem__V1__Reply **out, char *err, size_t errlen)
{
    return raw_recv_fds(fd, timeout_ms, out, NULL, NULL, err, errlen);
}

int raw_recv_fds(int fd, int timeout_ms, Tandem__V1__Reply **out, int *memfd, int *n_fds, char *err, size_t errlen)
{
    fd_catch c = {-1, 0}, *fds = memfd ? &c : NULL;
    double deadline = now_s() + timeout_ms / 1000.0;
    uint8_t hdr[4];
    ssize_t r = read_full_fds(fd, hdr, 4, deadline, fds);
    if (fds) *memfd = c.first, *n_fds = c.n;
    if (r == 0) return RAW_EOF;
    if (r == -1) {
        snprintf(err, errlen, "no reply within %d ms", timeout_ms);
        return RAW_TIMEOUT;
    }
    if (r == -3) {
        snprintf(err, errlen, "control data cut short: more descriptors than a reply may carry");
        return RAW_ERROR;
    }
    if (r != 4) {
        snprintf(err, errlen, "the connection ended inside a length prefix (%zd of 4 bytes)", r);
        return RAW_ERROR;
    }
    uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (len == 0 || len > (256u << 20)) {
        snprintf(err, errlen, "reply frame length %u", len);
        return RAW_ERROR;
    }
    uint8_t *body = malloc(len);
    if (!body) {
        snprintf(err, errlen, "out of memory for %u bytes", len);
        return RAW_ERROR;
    }
    r = read_full_fds(fd, body, len, deadline, fds);
    if (fds) *memfd = c.first, *n_fds = c.n;
    if (r != (ssize_t)len) {
        free(body);
        snprintf(err, errlen, "%s inside a reply of %u bytes",
                 r == -1 ? "timed out" : r == -3 ? "control data cut short" : "the connection ended", len);
        return r == -1 ? RAW_TIMEOUT : RAW_ERROR;
    }
    return raw_unpack(body, len, out, err, errlen);
}

int raw_unpack(uint8_t *body, uint32_t len, Tandem__V1__Reply **out, char *err, size_t errlen)
{
    Tandem__V1__Reply *rep = tandem__v1__reply__unpack(NULL, len, body);
    free(body);
    if (!rep) {
        snprintf(err, errlen, "a reply of %u bytes does not decode as a Reply", len);
        return RAW_ERROR;
    }
    *out = rep;
    return RAW_REPLY;
}

int raw_wait_eof(int fd, int timeout_ms)
{
    uint8_t b[256];
    ssize_t r = read_full_fds(fd, b, 1, now_s() + timeout_ms / 1000.0, NULL);
    if (r == 0) return RAW_EOF;
    if (r == 1) return RAW_REPLY;
    return r == -1 ? RAW_TIMEOUT : RAW_ERROR;
}

Tandem__V1__Reply *raw_call_or_fail(int fd, const Tandem__V1__Request *rq)
{
    cr_assert_eq(raw_send(fd, rq), 0, "sending request %llu: %s", (unsigned long long)rq->id, strerror(errno));
    Tandem__V1__Reply *rep = NULL;
    char err[256];
    int rc = raw_recv(fd, 10000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "request %llu (body %d): no reply: %s", (unsigned long long)rq->id,
                 (int)rq->body_case, rc == RAW_EOF ? "the server closed the connection" : err);
    cr_assert_eq(rep->id, rq->id, "reply id %llu to request %llu", (unsigned long long)rep->id,
                 (unsigned long long)rq->id);
    return rep;
}

Tandem__V1__Reply *raw_hello_reply_or_fail(int fd, uint64_t id)
{
    Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
    h.protocol_version = 1;
    h.client_name = "test_daemon";
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
    rq.hello = &h;
    Tandem__V1__Reply *r = raw_call_or_fail(fd, &rq);
    cr_assert_eq(r->body_case, TANDEM__V1__REPLY__BODY_HELLO, "Hello answered with body %d%s%s", (int)r->body_case,
                 r->body_case == TANDEM__V1__REPLY__BODY_ERROR ? ": " : "",
                 r->body_case == TANDEM__V1__REPLY__BODY_ERROR ? r->error->message : "");
    cr_assert_eq(r->hello->protocol_version, 1);
    return r;
}

void raw_hello_or_fail(int fd, uint64_t id) { tandem__v1__reply__free_unpacked(raw_hello_reply_or_fail(fd, id), NULL); }

void expect_error(const Tandem__V1__Reply *r, const char *what, uint64_t id, int code, const char *field,
                  int64_t index)
{
    cr_assert_eq(r->body_case, TANDEM__V1__REPLY__BODY_ERROR, "%s: expected an Error (code %d), got reply body %d",
                 what, code, (int)r->body_case);
    const Tandem__V1__Error *e = r->error;
    cr_assert_eq(r->id, id, "%s: Error for id %llu, expected id %llu", what, (unsigned long long)r->id,
                 (unsigned long long)id);
    cr_assert_eq((int)e->code, code, "%s: error code %d, expected %d (message: %s)", what, (int)e->code, code,
                 e->message);
    cr_assert_str_eq(e->field ? e->field : "", field, "%s: error field '%s', expected '%s' (message: %s)", what,
                     e->field ? e->field : "", field, e->message);
    if (index != INT64_MIN)
        cr_assert_eq(e->index, index, "%s: error index %lld, expected %lld (message: %s)", what, (long long)e->index,
                     (long long)index, e->message);
    cr_assert(e->message && strlen(e->message) > 0 && !strchr(e->message, '\n'),
              "%s: the message must be one non-empty line: '%s'", what, e->message ? e->message : "(null)");
}

/* ---- canonical ids ------------------------------------------------------------------------- */

typedef struct sha { EVP_MD_CTX *ctx; } sha;

static void sha_begin(sha *s)
{
    s->ctx = EVP_MD_CTX_new();
    cr_assert(s->ctx && EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) == 1);
}
static void sha_add(sha *s, const void *p, size_t n) { cr_assert(EVP_DigestUpdate(s->ctx, p, n) == 1); }
static void sha_u32(sha *s, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    sha_add(s, b, 4);
}
static void sha_u64(sha *s, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    sha_add(s, b, 8);
}
static void sha_end(sha *s, uint8_t id[32])
{
    unsigned n = 0;
    cr_assert(EVP_DigestFinal_ex(s->ctx, id, &n) == 1 && n == 32);
    EVP_MD_CTX_free(s->ctx);
}

void canon_mesh_id(const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris, uint8_t id[32])
{
    sha s;
    sha_begin(&s);
    sha_add(&s, "tandem-mesh-v1", 15); /* with its zero byte */
    sha_u32(&s, n_verts);
    sha_u32(&s, n_tris);
    for (size_t i = 0; i < 3 * (size_t)n_verts; i++) {
        uint32_t bits;
        memcpy(&bits, &verts[i], 4);
        sha_u32(&s, bits);
    }
    for (size_t i = 0; i < 3 * (size_t)n_tris; i++) sha_u32(&s, tris[i]);
    sha_end(&s, id);
}

static int cmp_obj(const void *a, const void *b)
{
    uint32_t x = ((const canon_object *)a)->id, y = ((const canon_object *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

void canon_scene_id(const canon_object *objs, uint32_t n, const uint32_t (*allowed)[2], uint32_t n_allowed,
                    uint8_t id[32])
{
    canon_object *o = malloc(sizeof *o * (n ? n : 1));
    uint32_t(*p)[2] = malloc(sizeof *p * (n_allowed ? n_allowed : 1));
    cr_assert(o && p);
    memcpy(o, objs, sizeof *o * n);
    qsort(o, n, sizeof *o, cmp_obj);
    uint32_t np = 0;
    for (uint32_t i = 0; i < n_allowed; i++) {
        uint32_t a = allowed[i][0], b = allowed[i][1];
        p[np][0] = a < b ? a : b;
        p[np][1] = a < b ? b : a;
        np++;
    }
    qsort(p, np, sizeof *p, cmp_pair);
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < np; i++)
        if (distinct == 0 || cmp_pair(p[distinct - 1], p[i]) != 0) {
            p[distinct][0] = p[i][0];
            p[distinct][1] = p[i][1];
            distinct++;
        }
    sha s;
    sha_begin(&s);
    sha_add(&s, "tandem-scene-v1", 16);
    sha_u32(&s, n);
    for (uint32_t i = 0; i < n; i++) {
        sha_u32(&s, o[i].id);
        sha_add(&s, o[i].mesh_id, 32);
        uint8_t mv = o[i].movable ? 1 : 0;
        sha_add(&s, &mv, 1);
        if (!o[i].movable) {
            double v[7];
            memcpy(v, o[i].pose, sizeof v);
            tdm_quat q = {v[3], v[4], v[5], v[6]};
            double qn = tdm_quat_norm(q);
            v[3] /= qn;
            v[4] /= qn;
            v[5] /= qn;
            v[6] /= qn;
            for (int k = 0; k < 7; k++) {
                uint64_t bits;
                memcpy(&bits, &v[k], 8);
                sha_u64(&s, bits);
            }
        }
    }
    sha_u32(&s, distinct);
    for (uint32_t i = 0; i < distinct; i++) {
        sha_u32(&s, p[i][0]);
        sha_u32(&s, p[i][1]);
    }
    sha_end(&s, id);
    free(o);
    free(p);
}

long dmn_rss_kb(const dmn *d, long *peak_kb)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)d->pid);
    FILE *f = fopen(path, "r");
    long rss = -1, hwm = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6)) rss = strtol(line + 6, NULL, 10);
        else if (!strncmp(line, "VmHWM:", 6)) hwm = strtol(line + 6, NULL, 10);
    }
    fclose(f);
    if (peak_kb) *peak_kb = hwm;
    return rss;
}

int dmn_metrics_port(const dmn *d)
{
    static const char said[] = "metrics and probes on http://127.0.0.1:";
    char *log = dmn_log(d);
    const char *p = NULL;
    for (const char *q = log; (q = strstr(q, said)); q++) p = q;
    int port = p ? atoi(p + strlen(said)) : -1;
    cr_assert(port > 0, "tandemd did not log its metrics port; its log:\n%s", log);
    free(log);
    return port;
}

int http_call(int port, const char *method, const char *path, char **body)
{
    *body = NULL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || raw_write_all(fd, req, (size_t)n) != 0) {
        free(buf);
        close(fd);
        return -1;
    }
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 10000) <= 0) break;
        if (len + 4096 > cap) {
            char *more = realloc(buf, cap *= 2);
            if (!more) break;
            buf = more;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    int status = -1;
    char *end = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || !end) status = -1;
    else *body = strdup(end + 4);
    free(buf);
    return *body ? status : -1;
}

double metric_value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ') return strtod(p + n + 1, NULL);
    return NAN;
}

int dmn_log_has(const dmn *d, const char *text, int ms)
{
    for (int t = 0;; t += 50) {
        char *log = dmn_log(d);
        int found = strstr(log, text) != NULL;
        free(log);
        if (found || t >= ms) return found;
        sleep_ms(50);
    }
}

double metric_now(int port, const char *series)
{
    char *body = NULL;
    double v = http_call(port, "GET", "/metrics", &body) == 200 ? metric_value(body, series) : NAN;
    free(body);
    return v;
}

const char *dmn_path(const dmn *d, const char *name)
{
    static char buf[16][512];
    static int k;
    char *p = buf[k++ % 16];
    snprintf(p, sizeof buf[0], "%s/%s", d->root, name);
    return p;
}

void dmn_write(const dmn *d, const char *name, const char *text)
{
    const char *path = dmn_path(d, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0, "writing %s", path);
}
