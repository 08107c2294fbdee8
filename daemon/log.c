#include "log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static tdm_log_level g_level = TDM_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void tdm_log_set_level(tdm_log_level level) { g_level = level; }
int tdm_log_enabled(tdm_log_level level) { return level <= g_level; }

int tdm_log_level_parse(const char *name, tdm_log_level *out)
{
    for (int i = 0; i <= TDM_LOG_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0) {
            *out = (tdm_log_level)i;
            return 0;
        }
    return -1;
}

const char *tdm_log_level_name(tdm_log_level level)
{
    return level >= TDM_LOG_ERROR && level <= TDM_LOG_DEBUG ? level_names[level] : "?";
}

void tdm_log(tdm_log_level level, const char *fmt, ...)
{
    if (!tdm_log_enabled(level)) return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%06ldZ %-5s ", ts.tv_nsec / 1000, tdm_log_level_name(level));
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (m < 0) m = 0;
    n += (size_t)m;
    if (n > sizeof line - 2) n = sizeof line - 2; /* cut an overlong line */
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w; /* nowhere left to report a failing stderr */
}

void tdm_log_sanitize(const char *in, size_t in_len, char *out, size_t out_len)
{
    size_t o = 0;
    if (out_len == 0) return;
    for (size_t i = 0; i < in_len && in[i]; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
            if (o + 1 >= out_len) break;
            out[o++] = (char)ch;
        } else {
            if (o + 4 >= out_len) break;
            snprintf(out + o, out_len - o, "\\x%02x", ch);
            o += 4;
        }
    }
    out[o] = 0;
}

const char *tdm_log_name(const char *name, char buf[TDM_LOG_NAME_MAX])
{
    tdm_log_sanitize(name ? name : "", SIZE_MAX, buf, TDM_LOG_NAME_MAX);
    return buf;
}

int tdm_log_limit_pass(tdm_log_limit *l, unsigned long long now_ns, unsigned long long *held)
{
    if (l->last_ns != 0 && now_ns - l->last_ns < 1000000000ull) {
        l->suppressed++;
        return 0;
    }
    *held = l->suppressed;
    l->suppressed = 0;
    l->last_ns = now_ns;
    return 1;
}
