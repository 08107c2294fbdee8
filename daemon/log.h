/* Logging: one line per event on stderr, "2024-05-01T12:00:00.123456Z info  text".
 *
 * Any thread may log; each line goes out in one write(2), so lines from
 * different threads never interleave. Messages below the level are not
 * formatted at all. */
#ifndef TDM_DAEMON_LOG_H
#define TDM_DAEMON_LOG_H

#include <stddef.h>

typedef enum tdm_log_level {
    TDM_LOG_ERROR = 0,
    TDM_LOG_WARN = 1,
    TDM_LOG_INFO = 2,
    TDM_LOG_DEBUG = 3
} tdm_log_level;

/* Set once at startup, before other threads exist. */
void tdm_log_set_level(tdm_log_level level);
int tdm_log_enabled(tdm_log_level level);
/* "error", "warn", "info", "debug": 0 and *out set, or -1 for an unknown name. */
int tdm_log_level_parse(const char *name, tdm_log_level *out);
const char *tdm_log_level_name(tdm_log_level level);

void tdm_log(tdm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define tdm_log_error(...) tdm_log(TDM_LOG_ERROR, __VA_ARGS__)
#define tdm_log_warn(...) tdm_log(TDM_LOG_WARN, __VA_ARGS__)
#define tdm_log_info(...) tdm_log(TDM_LOG_INFO, __VA_ARGS__)
#define tdm_log_debug(...)                                                                                            \
    do {                                                                                                             \
        if (tdm_log_enabled(TDM_LOG_DEBUG)) tdm_log(TDM_LOG_DEBUG, __VA_ARGS__);                                     \
    } while (0)

/* Copies untrusted text (a client's name, a peer address) into out for a log
 * line: printable ASCII kept, everything else as \xNN, cut to fit. */
void tdm_log_sanitize(const char *in, size_t in_len, char *out, size_t out_len);

/* A client-given name (of a mesh, scene or robot) as one log line may show it:
 * tdm_log_sanitize'd into buf, which is returned. A name with a newline can then
 * not write a line of its own into the log. */
#define TDM_LOG_NAME_MAX 256
const char *tdm_log_name(const char *name, char buf[TDM_LOG_NAME_MAX]);

/* Rate limiting of a repeated warning: one line a second at most per limit, the
 * next saying how many were held back. Loop thread (or one limit per thread). */
typedef struct tdm_log_limit {
    unsigned long long last_ns, suppressed;
} tdm_log_limit;
/* 1 when the line may go out at now_ns (*held: how many were held back since the
 * last that did), else 0 (counted as held back). */
int tdm_log_limit_pass(tdm_log_limit *l, unsigned long long now_ns, unsigned long long *held);

#endif
