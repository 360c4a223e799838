/*
 * ckube/util.h - the shared ground of every ckube library: error values,
 * klog-style logging and build/version information.
 *
 * Errors are returned, never logged by the library that returns them: an
 * action returns 0 or a negative CK_E* code and, when the caller passed one,
 * fills a struct ck_err with a sentence for a human.
 *
 * Logging mirrors k8s.io/klog/v2 and component-base/logs: severity letters
 * I/W/E/F, a global verbosity (-v N) below which V(n) messages are dropped,
 * the klog text header, and a JSON format (one object per line). All logging
 * calls are thread-safe; a line is written with one write so lines from
 * different threads never interleave.
 */
#ifndef CKUBE_UTIL_H
#define CKUBE_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

/* ---- errors ------------------------------------------------------------ */

/* Error codes are negated errno values, so strerror(-code) always works. */
#define CK_EINVAL     (-EINVAL)     /* bad argument or malformed input */
#define CK_ENOMEM     (-ENOMEM)     /* allocation failed */
#define CK_EIO        (-EIO)        /* I/O or backend failure */
#define CK_EADDRINUSE (-EADDRINUSE) /* listen address taken */
#define CK_ENOENT     (-ENOENT)     /* no such object or file */
#define CK_EEXIST     (-EEXIST)     /* already exists */
#define CK_EPERM      (-EPERM)      /* refused by policy */
#define CK_ECONFLICT  (-ESTALE)     /* the caller's view is stale: revision mismatch */
#define CK_ECOMPACTED (-ERANGE)     /* revision compacted away (HTTP 410 Gone) */

/* What went wrong, for a human. The caller owns it (usually on the stack). */
struct ck_err {
    int code;           /* negative CK_E* value, 0 when nothing failed */
    int http_status;    /* 404, 409, 422 ... when it came from the API layer, else 0 */
    const char *reason; /* Kubernetes StatusReason (a static string) or NULL */
    char msg[256];      /* one sentence: pods "web-1" not found */
};

/*
 * Fills *err (when err is not NULL) with code and a printf-style message and
 * returns code, so that failing is one line: `return ck_err_set(err, ...);`.
 */
int ck_err_set(struct ck_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- logging ----------------------------------------------------------- */

enum ck_log_severity {
    CK_LOG_INFO,
    CK_LOG_WARNING,
    CK_LOG_ERROR,
    CK_LOG_FATAL, /* logs, then exits the process with status 255 as klog does */
};

enum ck_log_format {
    CK_LOG_FORMAT_TEXT, /* klog: I1122 10:00:00.000000   1234 file.c:42] msg */
    CK_LOG_FORMAT_JSON, /* {"ts":1700000000.123456,"caller":"file.c:42","msg":"...","v":0} */
};

/* Sets the verbosity: V(n) messages with n <= level are written. Default 0. */
void ck_log_set_verbosity(int level);
int ck_log_verbosity(void);

/* True when a message at verbosity v would be written (klog's V(v).Enabled()). */
bool ck_log_v(int v);

void ck_log_set_format(enum ck_log_format format);

/*
 * Parses a --logging-format value ("text" or "json"). Returns 0 and sets
 * *ret_format, or CK_EINVAL leaving it untouched.
 */
int ck_log_parse_format(const char *name, enum ck_log_format *ret_format);

/*
 * Redirects log lines to out (borrowed; the caller keeps it open while in use).
 * NULL restores the default, standard error.
 */
void ck_log_set_output(FILE *out);

/* Writes one printf-style line. Use the CK_LOG* macros, which fill file and line. */
void ck_log_printf(enum ck_log_severity severity, int v, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Writes one structured line (klog's InfoS/ErrorS): msg, then key/value string
 * pairs ending with a NULL key. Text form: `"msg" key="value"`; JSON form: each
 * pair becomes a member of the line's object.
 */
void ck_log_kv(enum ck_log_severity severity, int v, const char *file, int line, const char *msg,
               ...) __attribute__((sentinel));

#define CK_LOGI(...)    ck_log_printf(CK_LOG_INFO, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGV(v, ...) ck_log_printf(CK_LOG_INFO, (v), __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGW(...)    ck_log_printf(CK_LOG_WARNING, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGE(...)    ck_log_printf(CK_LOG_ERROR, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGF(...)    ck_log_printf(CK_LOG_FATAL, 0, __FILE__, __LINE__, __VA_ARGS__)
#define CK_LOGS(v, msg, ...)                                                                       \
    ck_log_kv(CK_LOG_INFO, (v), __FILE__, __LINE__, (msg), __VA_ARGS__, (const char *)NULL)
#define CK_LOGS_ERR(msg, ...)                                                                      \
    ck_log_kv(CK_LOG_ERROR, 0, __FILE__, __LINE__, (msg), __VA_ARGS__, (const char *)NULL)

/* ---- base64 ------------------------------------------------------------ */

/* RFC 4648 base64 of len bytes, NUL-terminated; caller frees. NULL when out of memory. */
char *ck_base64_encode(const void *data, size_t len);

/*
 * Decodes base64 (standard or URL-safe alphabet; line breaks skipped;
 * decoding stops at the first '='). Returns the bytes plus a NUL the caller
 * frees, their count in *ret_len (may be NULL); NULL when text is malformed
 * or memory runs out.
 */
char *ck_base64_decode(const char *text, size_t *ret_len);

/* ---- version ----------------------------------------------------------- */

/*
 * Build information shaped like Kubernetes' version.Info. ckube reports the
 * Kubernetes API version it serves as major/minor (kubectl picks its
 * behaviour from the minor) and its own version inside gitVersion's build
 * metadata: v1.32.0+ckube.0.1.0. Every string is static.
 */
struct ck_version_info {
    const char *major;
    const char *minor;
    const char *git_version;
    const char *git_commit;
    const char *git_tree_state; /* "clean", "dirty" or "" when not built from git */
    const char *build_date;     /* RFC 3339, UTC */
    const char *go_version;     /* always "": ckube is not built with Go */
    const char *compiler;       /* the C compiler, e.g. "gcc 12.2.0" */
    const char *platform;       /* "linux/amd64" */
};

const struct ck_version_info *ck_version(void);

/* ckube's own release, e.g. "0.1.0". */
const char *ck_version_release(void);

/*
 * Renders the version as the JSON object Kubernetes serves at /version (keys
 * major, minor, gitVersion, ...), indented when pretty. Returns a string the
 * caller frees with free(), or NULL when out of memory.
 */
char *ck_version_json(bool pretty);

#endif /* CKUBE_UTIL_H */
