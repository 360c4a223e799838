/*
 * log.c - klog-style logging for every ckube component.
 *
 * Mirrors k8s.io/klog/v2's text header and component-base/logs' JSON format:
 *
 *   I1122 10:00:00.000000   1234 file.c:42] message
 *   {"ts":1763805600.000000,"caller":"file.c:42","msg":"message","v":0}
 *
 * The letter is the severity (I, W, E, F), then month and day, wall-clock time
 * in microseconds (UTC here; klog uses local time, and our machines run UTC),
 * the thread id right-aligned in 7 columns, and the source file's base name
 * and line. Structured calls quote the message and append key="value" pairs.
 * In JSON, info and warning lines carry "v" (their verbosity), error lines do
 * not, as in component-base.
 *
 * Threading: the settings are atomics; each line is formatted into a local
 * buffer and written with one fwrite under a mutex, so lines never interleave.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ckube/util.h"

#define LINE_MAX_BYTES 8192

static atomic_int verbosity;
static atomic_int format = CK_LOG_FORMAT_TEXT;
static _Atomic(FILE *) output;
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;

void ck_log_set_verbosity(int level)
{
    atomic_store(&verbosity, level);
}

int ck_log_verbosity(void)
{
    return atomic_load(&verbosity);
}

bool ck_log_v(int v)
{
    return v <= atomic_load(&verbosity);
}

void ck_log_set_format(enum ck_log_format f)
{
    atomic_store(&format, (int)f);
}

int ck_log_parse_format(const char *name, enum ck_log_format *ret_format)
{
    if (strcmp(name, "text") == 0)
        *ret_format = CK_LOG_FORMAT_TEXT;
    else if (strcmp(name, "json") == 0)
        *ret_format = CK_LOG_FORMAT_JSON;
    else
        return CK_EINVAL;
    return 0;
}

void ck_log_set_output(FILE *out)
{
    atomic_store(&output, out);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A bounded string builder over a fixed buffer: overflow truncates, never fails. */
struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
};

static void line_appendf(struct line *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void line_vappendf(struct line *l, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void line_vappendf(struct line *l, const char *fmt, va_list ap)
{
    size_t room = sizeof(l->buf) - l->len;
    if (room <= 1)
        return;
    int n = vsnprintf(l->buf + l->len, room, fmt, ap);
    if (n < 0)
        return;
    l->len += (size_t)n < room ? (size_t)n : room - 1;
}

static void line_appendf(struct line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    line_vappendf(l, fmt, ap);
    va_end(ap);
}

/* Appends s as a Go %q-style quoted string. */
static void line_append_quoted(struct line *l, const char *s)
{
    line_appendf(l, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            line_appendf(l, "\\%c", c);
        else if (c == '\n')
            line_appendf(l, "\\n");
        else if (c == '\t')
            line_appendf(l, "\\t");
        else if (c < 0x20 || c == 0x7f)
            line_appendf(l, "\\x%02x", c);
        else
            line_appendf(l, "%c", c);
    }
    line_appendf(l, "\"");
}

static void write_line(struct line *l)
{
    /* A line cut at the buffer's end still ends the line. */
    if (l->len > 0 && l->buf[l->len - 1] != '\n')
        l->buf[l->len - 1] = '\n';
    FILE *out = atomic_load(&output);
    if (!out)
        out = stderr;
    pthread_mutex_lock(&output_lock);
    fwrite(l->buf, 1, l->len, out);
    fflush(out);
    pthread_mutex_unlock(&output_lock);
}

static void text_header(struct line *l, enum ck_log_severity severity, const char *file, int line)
{
    static const char letters[] = "IWEF";
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    line_appendf(l, "%c%02d%02d %02d:%02d:%02d.%06ld %7ld %s:%d] ", letters[severity],
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec,
                 (long)gettid(), base_name(file), line);
}

/* Builds the JSON object for one line; pairs is a va_list of key/value strings or NULL. */
static void emit_json(enum ck_log_severity severity, int v, const char *file, int line,
                      const char *msg, va_list *pairs)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    char caller[256];
    snprintf(caller, sizeof(caller), "%s:%d", base_name(file), line);

    json_t *obj = json_object();
    if (!obj)
        return;
    json_object_set_new(obj, "ts", json_real((double)tv.tv_sec + (double)tv.tv_usec / 1e6));
    json_object_set_new(obj, "caller", json_string(caller));
    json_object_set_new(obj, "msg", json_string(msg));
    if (severity <= CK_LOG_WARNING)
        json_object_set_new(obj, "v", json_integer(v));
    if (pairs) {
        const char *key;
        while ((key = va_arg(*pairs, const char *)) != NULL) {
            const char *value = va_arg(*pairs, const char *);
            json_object_set_new(obj, key, json_string(value ? value : ""));
        }
    }
    char *text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(obj);
    if (!text)
        return;
    struct line *l = malloc(sizeof(*l));
    if (l) {
        l->len = 0;
        line_appendf(l, "%s\n", text);
        write_line(l);
        free(l);
    }
    free(text);
}

static void finish(enum ck_log_severity severity)
{
    if (severity == CK_LOG_FATAL)
        exit(255);
}

void ck_log_printf(enum ck_log_severity severity, int v, const char *file, int line,
                   const char *fmt, ...)
{
    if (severity == CK_LOG_INFO && !ck_log_v(v))
        return;
    struct line *l = malloc(sizeof(*l));
    if (!l)
        return;
    l->len = 0;
    va_list ap;
    va_start(ap, fmt);
    line_vappendf(l, fmt, ap);
    va_end(ap);

    if (atomic_load(&format) == CK_LOG_FORMAT_JSON) {
        emit_json(severity, v, file, line, l->buf, NULL);
    } else {
        struct line *text = malloc(sizeof(*text));
        if (text) {
            text->len = 0;
            text_header(text, severity, file, line);
            line_appendf(text, "%s\n", l->buf);
            write_line(text);
            free(text);
        }
    }
    free(l);
    finish(severity);
}

void ck_log_kv(enum ck_log_severity severity, int v, const char *file, int line, const char *msg,
               ...)
{
    if (severity == CK_LOG_INFO && !ck_log_v(v))
        return;
    va_list ap;
    va_start(ap, msg);
    if (atomic_load(&format) == CK_LOG_FORMAT_JSON) {
        emit_json(severity, v, file, line, msg, &ap);
    } else {
        struct line *l = malloc(sizeof(*l));
        if (l) {
            l->len = 0;
            text_header(l, severity, file, line);
            line_append_quoted(l, msg);
            const char *key;
            while ((key = va_arg(ap, const char *)) != NULL) {
                const char *value = va_arg(ap, const char *);
                line_appendf(l, " %s=", key);
                line_append_quoted(l, value ? value : "");
            }
            line_appendf(l, "\n");
            write_line(l);
            free(l);
        }
    }
    va_end(ap);
    finish(severity);
}
