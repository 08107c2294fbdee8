#include "server.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "conn.h"
#include "log.h"
#include "metrics.h"
#include "stats.h"
#include "tls.h"

#define BACKLOG 511

static void on_connection(uv_stream_t *l, int status)
{
    tdm_listener *li = l->data;
    if (status < 0) {
        tdm_log_warn("listener %s: %s", li->addr, uv_strerror(status));
        return;
    }
    tdm_srv_lock(li->srv);
    tdm_conn_accept(li->srv, l, li->unix_path != NULL);
    tdm_srv_unlock(li->srv);
}

/* "host:port", "[v6]:port". 0 or -1. */
static int split_host_port(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon;
    const char *h = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':') return -1;
        h = addr + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return -1;
        hl = (size_t)(colon - addr);
    }
    if (hl == 0 || hl >= hostlen || strlen(colon + 1) == 0 || strlen(colon + 1) >= portlen) return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    strcpy(port, colon + 1);
    for (const char *p = port; *p; p++)
        if (*p < '0' || *p > '9') return -1;
    return 0;
}

/* A socket file left by a server that died is removed; a live one is an error. */
static int clear_unix_path(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return TDM_EIO;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket", path);
        return TDM_EIO;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "%s: path too long for a Unix socket", path);
        return TDM_EIO;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int live = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        close(fd);
        if (live) {
            snprintf(err, errlen, "%s: another server is listening there", path);
            return TDM_EIO;
        }
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
        return TDM_EIO;
    }
    tdm_log_info("removed stale socket %s", path);
    return 0;
}

/* 127.0.0.0/8, ::1, or an IPv4-mapped 127.x address. */
static int is_loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6) {
        const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(x)) return 1;
        return IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127;
    }
    return 0;
}

static int listen_one(tdm_server *s, tdm_listener *l, char *err, size_t errlen)
{
    int rc;
    l->srv = s;
    if (strncmp(l->addr, "unix:", 5) == 0) {
        const char *path = l->addr + 5;
        if (!*path) {
            snprintf(err, errlen, "listen %s: empty socket path", l->addr);
            return TDM_EIO;
        }
        if (clear_unix_path(path, err, errlen) != 0) return TDM_EIO;
        if ((rc = uv_pipe_init(s->loop, &l->h.pipe, 0)) != 0) goto uv_fail;
        l->initialised = 1;
        l->h.handle.data = l;
        /* created for the owner alone whatever the umask (the umask is the process's:
           listeners are made at start-up, before any request is served), then opened to
           the group when asked */
        mode_t old_mask = umask(0177);
        rc = uv_pipe_bind(&l->h.pipe, path);
        umask(old_mask);
        if (rc != 0) goto uv_fail;
        mode_t mode = s->cfg->unix_socket_group ? 0660 : 0600;
        if (chmod(path, mode) != 0) {
            snprintf(err, errlen, "listen %s: chmod %o: %s", l->addr, (unsigned)mode, strerror(errno));
            return TDM_EIO;
        }
        if (!(l->unix_path = strdup(path))) {
            snprintf(err, errlen, "out of memory");
            return TDM_EIO;
        }
    } else {
        char host[256], port[16];
        if (split_host_port(l->addr, host, sizeof host, port, sizeof port) != 0) {
            snprintf(err, errlen, "listen %s: expected HOST:PORT, [IPV6]:PORT or unix:PATH", l->addr);
            return TDM_EIO;
        }
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        struct addrinfo *ai = NULL;
        int g = getaddrinfo(host, port, &hints, &ai);
        if (g != 0 || !ai) {
            snprintf(err, errlen, "listen %s: %s", l->addr, gai_strerror(g));
            return TDM_EIO;
        }
        if (!s->cfg->auth_token[0] && !s->cfg->tenants_file[0] && !s->cfg->insecure_listen &&
            !is_loopback(ai->ai_addr)) {
            freeaddrinfo(ai);
            snprintf(err, errlen,
                     "listen %s: not a loopback address, and no auth token: anyone who reaches it could use and "
                     "delete everything (give --auth-token-file FILE or --tenants-file FILE, or --insecure-listen 1 to "
                     "accept)",
                     l->addr);
            return TDM_EIO;
        }
        if ((rc = uv_tcp_init(s->loop, &l->h.tcp)) != 0) {
            freeaddrinfo(ai);
            goto uv_fail;
        }
        l->initialised = 1;
        l->h.handle.data = l;
        rc = uv_tcp_bind(&l->h.tcp, ai->ai_addr, 0);
        freeaddrinfo(ai);
        if (rc != 0) goto uv_fail;
    }
    if ((rc = uv_listen(&l->h.stream, BACKLOG, on_connection)) != 0) goto uv_fail;
    tdm_log_info("listening on %s%s", l->addr, !l->unix_path && s->tls ? " (TLS)" : "");
    return 0;
uv_fail:
    snprintf(err, errlen, "listen %s: %s", l->addr, uv_strerror(rc));
    return TDM_EIO;
}

int tdm_server_listen(tdm_server *s, char *err, size_t errlen)
{
    s->listeners = calloc(s->cfg->n_listen, sizeof *s->listeners);
    if (!s->listeners) {
        snprintf(err, errlen, "out of memory");
        return TDM_EIO;
    }
    s->n_listeners = s->cfg->n_listen;
    const tdm_config *cfg = s->cfg;
    if (cfg->tls_cert[0]) {
        if (tdm_tls_ctx_new(cfg->tls_cert, cfg->tls_key, cfg->tls_ca, &s->tls, err, errlen) != 0) return TDM_EIO;
        tdm_log_info("TLS on TCP listeners: certificate %s%s%s", cfg->tls_cert,
                     cfg->tls_ca[0] ? ", client certificates verified against " : "", cfg->tls_ca);
    }
    for (size_t i = 0; i < s->n_listeners; i++) {
        s->listeners[i].addr = s->cfg->listen[i];
        if (listen_one(s, &s->listeners[i], err, errlen) != 0) return TDM_EIO;
    }
    return 0;
}

/* ---- memory (budget.h) ---- */

int tdm_server_budget_start(tdm_server *s)
{
    s->mem.max = s->cfg->max_memory ? s->cfg->max_memory : tdm_budget_default_max();
    tdm_log_info("max-memory %llu bytes (partial frames, queued replies, queries, uploads)%s",
                 (unsigned long long)s->mem.max, s->cfg->max_memory ? "" : ": half of physical memory");
    return 0;
}

/* ---- shutdown ---- */

static void on_signal(uv_signal_t *h, int signum)
{
    tdm_server *s = h->data;
    tdm_log_info("received %s", signum == SIGINT ? "SIGINT" : "SIGTERM");
    tdm_srv_lock(s);
    tdm_server_shutdown(s, s->shutting_down != 0);
    tdm_srv_unlock(s);
}

int tdm_server_signals(tdm_server *s)
{
    int rc;
    if ((rc = uv_signal_init(s->loop, &s->sig_int)) != 0) return rc;
    s->sig_int.data = s;
    if ((rc = uv_signal_init(s->loop, &s->sig_term)) != 0) {
        uv_close((uv_handle_t *)&s->sig_int, NULL);
        return rc;
    }
    s->sig_term.data = s;
    s->signals = 1;
    if ((rc = uv_signal_start(&s->sig_int, on_signal, SIGINT)) != 0) return rc;
    return uv_signal_start(&s->sig_term, on_signal, SIGTERM);
}

static void on_timeout(uv_timer_t *t)
{
    tdm_server *s = t->data;
    tdm_srv_lock(s);
    tdm_log_warn("shutdown-timeout (%u s) passed with %u connections open: closing them", s->cfg->shutdown_timeout,
                 s->n_conns);
    tdm_server_shutdown(s, 1);
    tdm_srv_unlock(s);
}

static void maybe_finish(tdm_server *s)
{
    if (!s->shutting_down || s->stopped || s->conns) return;
    s->stopped = 1;
    if (s->ready) tdm_stats_log(s);
    /* no connection is left, so nothing waits on either thread's replies */
    tdm_writer_stop(s->writer);
    s->writer = NULL;
    tdm_query_pool_stop(s->query_pool);
    s->query_pool = NULL;
    tdm_io_stop_all(s); /* the loops' sinks and wake-ups; the I/O threads end */
    if (s->timer) uv_close((uv_handle_t *)&s->shutdown_timer, NULL);
    if (s->exit_timer_on) uv_close((uv_handle_t *)&s->exit_timer, NULL);
    if (s->signals) {
        uv_close((uv_handle_t *)&s->sig_int, NULL);
        uv_close((uv_handle_t *)&s->sig_term, NULL);
    }
    if (s->ready) tdm_log_info("all connections closed; stopping");
}

static void finish_task(tdm_io *io, void *arg)
{
    (void)io;
    tdm_server *s = arg;
    s->finish_posted = 0;
    maybe_finish(s);
}

void tdm_server_conn_gone(tdm_server *s, tdm_io *io)
{
    if (io == &s->io[0]) {
        maybe_finish(s);
        return;
    }
    /* the main loop's handles are the main loop's to close */
    if (!s->shutting_down || s->conns || s->finish_posted) return;
    s->finish_posted = 1;
    s->finish_task.fn = finish_task;
    s->finish_task.arg = s;
    tdm_io_post(&s->io[0], &s->finish_task);
}

/* The forced shutdown closed every connection, cancelling their queued work, but runs
 * already in the engine (or a writer op) still hold some: past this grace, exit without
 * them. Nothing acknowledged is lost: a reply to an upload is sent once its files are
 * durable, and the data directory's writes survive being cut short (as a kill -9). */
static void on_exit_grace(uv_timer_t *t)
{
    tdm_server *s = t->data;
    tdm_srv_lock(s); /* never released when it exits */
    if (s->stopped) {
        tdm_srv_unlock(s);
        return;
    }
    tdm_log_warn("shutdown: %u connections still wait for engine runs or writes %u ms after they were closed; "
                 "exiting without them", s->n_conns, TDM_SHUTDOWN_EXIT_GRACE_MS);
    tdm_log_info("tandemd stopped");
    _exit(0);
}

void tdm_server_shutdown(tdm_server *s, int force)
{
    if (!s->shutting_down) {
        s->shutting_down = 1;
        if (s->ready) sd_notify(0, "STOPPING=1");
        tdm_metrics_not_ready("shutting down");
        if (s->ready)
            tdm_log_info("shutting down: no new connections; answering what is in flight (%u connections)",
                         s->n_conns);
        for (size_t i = 0; i < s->n_listeners; i++) {
            tdm_listener *l = &s->listeners[i];
            if (!l->initialised) continue;
            uv_close(&l->h.handle, NULL);
            if (l->unix_path && unlink(l->unix_path) != 0 && errno != ENOENT)
                tdm_log_warn("cannot remove %s: %s", l->unix_path, strerror(errno));
        }
        /* the I/O threads shut their own connections down */
        if (s->io) tdm_io_shutdown_conns(&s->io[0], 0);
        for (unsigned i = 1; s->io && i <= s->n_io; i++) tdm_io_request(&s->io[i], TDM_IO_WANT_SHUTDOWN);
        if (!force && s->cfg->shutdown_timeout > 0 && uv_timer_init(s->loop, &s->shutdown_timer) == 0) {
            s->timer = 1;
            s->shutdown_timer.data = s;
            uv_timer_start(&s->shutdown_timer, on_timeout, (uint64_t)s->cfg->shutdown_timeout * 1000, 0);
            uv_unref((uv_handle_t *)&s->shutdown_timer);
        }
    }
    if (force && s->shutting_down < 2) {
        s->shutting_down = 2;
        if (s->conns) tdm_log_info("closing %u connections now", s->n_conns);
        if (s->io) tdm_io_shutdown_conns(&s->io[0], 1);
        for (unsigned i = 1; s->io && i <= s->n_io; i++) tdm_io_request(&s->io[i], TDM_IO_WANT_CLOSE);
        if (s->conns && s->ready && !s->exit_timer_on && uv_timer_init(s->loop, &s->exit_timer) == 0) {
            s->exit_timer_on = 1;
            s->exit_timer.data = s;
            uv_timer_start(&s->exit_timer, on_exit_grace, TDM_SHUTDOWN_EXIT_GRACE_MS, 0);
        }
    }
    maybe_finish(s);
}

int tdm_server_split_addr(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
    return split_host_port(addr, host, hostlen, port, portlen);
}
