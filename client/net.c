/* Addresses and connecting: TCP (IPv4/IPv6, by name) and Unix-domain sockets. */
#define _GNU_SOURCE /* SOCK_NONBLOCK, SOCK_CLOEXEC */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

int tdm__net_so_error(int fd)
{
    int e = 0;
    socklen_t len = sizeof e;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0) return errno;
    return e;
}

/* Waits for a started connect; 0, or a code with err set. */
static int wait_connected(int fd, double deadline, const char *addr, char *err, size_t errlen)
{
    for (;;) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - tdm__now_ms();
            if (left <= 0) goto timeout;
            ms = (int)left + 1;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int n = poll(&p, 1, ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            tdm__fmt(err, errlen, "%s: poll: %s", addr, strerror(errno));
            return TDM_CLIENT_ECONNECT;
        }
        if (n == 0) goto timeout;
        int e = tdm__net_so_error(fd);
        if (e) {
            tdm__fmt(err, errlen, "%s: %s", addr, strerror(e));
            return TDM_CLIENT_ECONNECT;
        }
        return 0;
    }
timeout:
    tdm__fmt(err, errlen, "%s: connect timed out", addr);
    return TDM_CLIENT_ETIMEOUT;
}

static int start_one(int family, const struct sockaddr *sa, socklen_t salen, int *in_progress)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    *in_progress = 0;
    if (connect(fd, sa, salen) == 0) return fd;
    if (errno == EINPROGRESS) {
        *in_progress = 1;
        return fd;
    }
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* Splits "host:port", "[v6]:port" or "host" into host and port strings. */
int tdm__net_split(const char *addr, char *host, size_t hostcap, char *port, size_t portcap)
{
    const char *colon;
    size_t hl;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close) return -1;
        hl = (size_t)(close - addr - 1);
        if (hl >= hostcap) return -1;
        memcpy(host, addr + 1, hl);
        host[hl] = 0;
        if (close[1] == 0) {
            snprintf(port, portcap, "%d", TDM_DEFAULT_PORT);
            return 0;
        }
        if (close[1] != ':') return -1;
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (colon && strchr(addr, ':') != colon) colon = NULL; /* a bare IPv6 address */
        hl = colon ? (size_t)(colon - addr) : strlen(addr);
        if (hl >= hostcap) return -1;
        memcpy(host, addr, hl);
        host[hl] = 0;
        if (!colon) {
            snprintf(port, portcap, "%d", TDM_DEFAULT_PORT);
            return 0;
        }
    }
    const char *ps = colon + 1;
    char *end;
    errno = 0;
    long v = strtol(ps, &end, 10);
    if (!*ps || *end || errno || v < 1 || v > 65535) return -1;
    snprintf(port, portcap, "%ld", v);
    return host[0] ? 0 : -1;
}

int tdm__net_connect(const char *addr, int timeout_ms, bool wait, int *in_progress, char *err, size_t errlen)
{
    double deadline = timeout_ms > 0 ? tdm__now_ms() + timeout_ms : 0;
    int prog = 0, fd;
    *in_progress = 0;
    if (!addr || !*addr) {
        tdm__fmt(err, errlen, "empty server address");
        return TDM_CLIENT_EADDR;
    }
    if (!strncmp(addr, "unix:", 5)) {
        struct sockaddr_un sun;
        const char *path = addr + 5;
        memset(&sun, 0, sizeof sun);
        sun.sun_family = AF_UNIX;
        if (!*path || strlen(path) >= sizeof sun.sun_path) {
            tdm__fmt(err, errlen, "%s: bad Unix socket path", addr);
            return TDM_CLIENT_EADDR;
        }
        strcpy(sun.sun_path, path);
        fd = start_one(AF_UNIX, (const struct sockaddr *)&sun, sizeof sun, &prog);
        if (fd < 0) {
            tdm__fmt(err, errlen, "%s: %s", addr, strerror(errno));
            return TDM_CLIENT_ECONNECT;
        }
        if (prog && wait) {
            int rc = wait_connected(fd, deadline, addr, err, errlen);
            if (rc) {
                close(fd);
                return rc;
            }
            prog = 0;
        }
        *in_progress = prog;
        return fd;
    }

    char host[256], port[16];
    if (tdm__net_split(addr, host, sizeof host, port, sizeof port) < 0) {
        tdm__fmt(err, errlen, "'%s' is not host:port, [v6]:port, host or unix:/path", addr);
        return TDM_CLIENT_EADDR;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        tdm__fmt(err, errlen, "%s: %s", addr, gai_strerror(g));
        return TDM_CLIENT_EADDR;
    }
    int rc = TDM_CLIENT_ECONNECT;
    tdm__fmt(err, errlen, "%s: no usable address", addr);
    fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = start_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen, &prog);
        if (fd < 0) {
            tdm__fmt(err, errlen, "%s: %s", addr, strerror(errno));
            continue;
        }
        if (prog && wait) {
            rc = wait_connected(fd, deadline, addr, err, errlen);
            if (rc) {
                close(fd);
                fd = -1;
                if (rc == TDM_CLIENT_ETIMEOUT) break;
                continue;
            }
            prog = 0;
        }
        break;
    }
    freeaddrinfo(res);
    if (fd < 0) return rc;
    if (errlen) err[0] = 0;
    *in_progress = prog;
    return fd;
}
