/* libuv adapter for the asynchronous Tandem client (header-only, like hiredis'
 * adapters/libuv.h).
 *
 *     tdm_async *ac = tdm_async_connect(&opts);
 *     if (tdm_async_err(ac)) { fprintf(stderr, "%s\n", tdm_async_errstr(ac)); tdm_async_free(ac); }
 *     else tdm_libuv_attach(ac, uv_default_loop());
 *
 * One uv_poll_t watches the socket, one uv_timer_t runs the timeouts. The handles' memory is freed in its close callback,
 * which runs after the context is gone, so the loop never touches freed memory. Call from
 * the loop's thread only. */
#ifndef TANDEM_ADAPTERS_LIBUV_H
#define TANDEM_ADAPTERS_LIBUV_H

#include <stdlib.h>
#include <uv.h>

#include "../tandem.h"

typedef struct tdm_libuv_events {
    uv_poll_t handle;
    uv_timer_t timer; /* the context's timeouts */
    tdm_async *ac;    /* NULL once the context has gone */
    int events;
    int open_handles; /* freed when both handles have closed */
} tdm_libuv_events;

static void tdm__libuv_on_poll(uv_poll_t *handle, int status, int events)
{
    tdm_libuv_events *p = (tdm_libuv_events *)handle->data;
    /* On a poll error, let the context find out by trying what it wanted. */
    int ev = status < 0 ? p->events : events;
    if (p->ac && (ev & UV_READABLE)) tdm_async_handle_read(p->ac);
    if (p->ac && (ev & UV_WRITABLE)) tdm_async_handle_write(p->ac);
}

static void tdm__libuv_update(tdm_libuv_events *p, int events)
{
    if (events == p->events) return;
    p->events = events;
    if (events) uv_poll_start(&p->handle, events, tdm__libuv_on_poll);
    else uv_poll_stop(&p->handle);
}

static void tdm__libuv_add_read(void *d)
{
    tdm_libuv_events *p = (tdm_libuv_events *)d;
    tdm__libuv_update(p, p->events | UV_READABLE);
}

static void tdm__libuv_del_read(void *d)
{
    tdm_libuv_events *p = (tdm_libuv_events *)d;
    tdm__libuv_update(p, p->events & ~UV_READABLE);
}

static void tdm__libuv_add_write(void *d)
{
    tdm_libuv_events *p = (tdm_libuv_events *)d;
    tdm__libuv_update(p, p->events | UV_WRITABLE);
}

static void tdm__libuv_del_write(void *d)
{
    tdm_libuv_events *p = (tdm_libuv_events *)d;
    tdm__libuv_update(p, p->events & ~UV_WRITABLE);
}

static void tdm__libuv_on_timer(uv_timer_t *timer)
{
    tdm_libuv_events *p = (tdm_libuv_events *)timer->data;
    if (p->ac) tdm_async_handle_timeout(p->ac);
}

static void tdm__libuv_set_timer(void *d, int64_t ms)
{
    tdm_libuv_events *p = (tdm_libuv_events *)d;
    if (ms < 0) uv_timer_stop(&p->timer);
    else uv_timer_start(&p->timer, tdm__libuv_on_timer, (uint64_t)ms, 0);
}

static void tdm__libuv_on_close(uv_handle_t *handle)
{
    tdm_libuv_events *p = (tdm_libuv_events *)handle->data;
    if (--p->open_handles == 0) free(p);
}

static void tdm__libuv_cleanup(void *d)
{
    tdm_libuv_events *p = (tdm_libuv_events *)d;
    p->ac = NULL;
    uv_close((uv_handle_t *)&p->handle, tdm__libuv_on_close);
    uv_close((uv_handle_t *)&p->timer, tdm__libuv_on_close);
}

/* Attaches ac to loop (a uv_poll_t for the socket, a uv_timer_t for its timeouts). Returns 0, TDM_CLIENT_EINVAL (already attached, or no socket) or
 * TDM_CLIENT_ENOMEM / TDM_CLIENT_EIO (libuv refused the socket). On failure the context is
 * untouched and still the caller's to free. */
static inline int tdm_libuv_attach(tdm_async *ac, uv_loop_t *loop)
{
    if (tdm_async_fd(ac) < 0) return TDM_CLIENT_EINVAL;
    tdm_libuv_events *p = (tdm_libuv_events *)calloc(1, sizeof *p);
    if (!p) return TDM_CLIENT_ENOMEM;
    if (uv_poll_init(loop, &p->handle, tdm_async_fd(ac)) != 0) {
        free(p);
        return TDM_CLIENT_EIO;
    }
    uv_timer_init(loop, &p->timer);
    p->handle.data = p;
    p->timer.data = p;
    p->open_handles = 2;
    p->ac = ac;
    tdm_async_ev ev = {p, tdm__libuv_add_read, tdm__libuv_del_read, tdm__libuv_add_write, tdm__libuv_del_write,
                       tdm__libuv_cleanup, tdm__libuv_set_timer};
    int rc = tdm_async_attach(ac, &ev);
    if (rc) {
        p->ac = NULL;
        uv_close((uv_handle_t *)&p->handle, tdm__libuv_on_close);
        uv_close((uv_handle_t *)&p->timer, tdm__libuv_on_close);
    }
    return rc;
}

#endif
