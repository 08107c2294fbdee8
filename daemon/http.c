#include "http.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "log.h"
#include "metrics.h"
#include "server.h"

/* A scraper or a kubelet needs a handful of connections; a slow one is cut off. */
#define HTTP_MAX_CONNECTIONS 16
#define HTTP_TIMEOUT_S 10

struct tdm_http {
    struct MHD_Daemon *d;
    uint32_t health_timeout_s;
    int port;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE) free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    return reply(conn, status, "text/plain; charset=utf-8", buf, (size_t)n, MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    tdm_http *h = cls;
    if (!*state) { /* the first call sees the headers only; answer on the second */
        *state = h;
        return MHD_YES;
    }
    if (*upload_size) { /* a body we do not read */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    if (strcmp(url, "/metrics") == 0) {
        size_t len;
        char *body = tdm_metrics_render(&len);
        if (!body) return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len, MHD_RESPMEM_MUST_FREE);
    }
    if (strcmp(url, "/healthz") == 0) {
        double age = tdm_metrics_heartbeat_age();
        if (age < 0) return text(conn, MHD_HTTP_OK, "starting\n");
        if (age > (double)h->health_timeout_s)
            return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                        "the event loop has not run for %.1f s (health-loop-timeout %u s)\n", age,
                        h->health_timeout_s);
        return text(conn, MHD_HTTP_OK, "ok\n");
    }
    if (strcmp(url, "/readyz") == 0) {
        const char *why;
        double age = tdm_metrics_heartbeat_age();
        if (age > (double)h->health_timeout_s) /* what the loop last said is stale */
            return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: the event loop has not run for %.1f s\n", age);
        if (tdm_metrics_ready(&why)) return text(conn, MHD_HTTP_OK, "ready\n");
        return text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: %s\n", why);
    }
    return text(conn, MHD_HTTP_NOT_FOUND, "not found: GET /metrics, /healthz or /readyz\n");
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    buf[strcspn(buf, "\r\n")] = 0;
    tdm_log_warn("metrics endpoint: %s", buf);
}

int tdm_http_start(const char *addr, uint32_t health_timeout_s, tdm_http **out, char *err, size_t errlen)
{
    *out = NULL;
    char host[256], port[16];
    if (tdm_server_split_addr(addr, host, sizeof host, port, sizeof port) != 0) {
        snprintf(err, errlen, "metrics-listen %s: expected HOST:PORT or [IPV6]:PORT", addr);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g != 0 || !ai) {
        snprintf(err, errlen, "metrics-listen %s: %s", addr, gai_strerror(g));
        return -1;
    }
    tdm_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->health_timeout_s = health_timeout_s;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    /* the port comes from SOCK_ADDR; the logger first, so that MHD logs nothing itself */
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
                            MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        snprintf(err, errlen, "metrics-listen %s: cannot listen there (in use, or not an address of this host)", addr);
        free(h);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : atoi(port);
    int v6 = strchr(host, ':') != NULL;
    tdm_log_info("metrics and probes on http://%s%s%s:%d/metrics, /healthz, /readyz", v6 ? "[" : "", host,
                 v6 ? "]" : "", h->port);
    *out = h;
    return 0;
}

int tdm_http_port(const tdm_http *h) { return h->port; }

void tdm_http_stop(tdm_http *h)
{
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
