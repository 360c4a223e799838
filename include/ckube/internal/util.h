/*
 * ckube/internal/util.h - helpers every ckube library shares; part of libckube-util.
 *
 * Unlike ckube/util.h this header is not installed and promises no stable API: it
 * is the one place the project's libraries (and their tests) take the small pieces
 * they all need from, instead of reaching into each other's private headers.
 *
 * - ck__malloc/ck__calloc/ck__realloc/ck__strdup: the allocation calls, with a test
 *   hook that makes the Nth call fail, so allocation failure is an ordinary test
 *   (SQLite's faultsim). The hook is process-wide; its counters are atomic.
 * - ck__memory_release: free pages given back to the system now, whichever allocator
 *   the program links (jemalloc, or glibc's in sanitizer builds); ck__memory_idle: the
 *   calling thread's cache of freed blocks given back before it waits.
 * - struct ck__strmap: a string-keyed hash map (chaining, FNV-1a, doubling). It copies
 *   keys and stores void * values it does not own. Not thread-safe: its owner locks.
 * - struct ck__buf: a growable NUL-terminated byte buffer with an optional cap and a
 *   sticky error, a libcurl write callback and a newline splitter over it.
 * - ck__pb_*: the protobuf wire format (varints, tags, length-delimited and fixed
 *   fields) written into a struct ck__buf and read from untrusted bytes.
 * - ck__grpc_*: gRPC calls over HTTP/2 without TLS (nghttp2), to host:port or a unix
 *   socket: etcd's API for the store, a container runtime's CRI for the agent.
 * - ck__read_file: a whole small file, capped; ck__write_file_atomic: a file written
 *   safely into the data directory; ck__check_private_dir.
 * - ck__meta_str: a string field of an object's metadata.
 * - ck__time_parse/ck__time_format: RFC 3339 times as Kubernetes writes them.
 * - ck__parse_bool/ck__quote: Go's strconv.ParseBool and %q, which Kubernetes' inputs
 *   and messages follow.
 * - ck__path_push/ck__path_push_index: a step appended to a field path, cut to fit.
 * - ck__json_dumps: jansson's json_dumps(), whole or NULL when memory runs out.
 * - ck__json_copy: json_deep_copy() without its cycle check, for our own trees.
 * - ck__yaml_to_json/ck__json_to_yaml: YAML read into jansson and written from it,
 *   both through libyaml, the writer making the choices kube-apiserver's YAML makes.
 * - struct ck__regex: Go's regular expressions (RE2 syntax, linear-time search), for
 *   schema patterns and CEL's matches(), find() and findAll(); regex.cc wraps RE2's C++
 *   library.
 *
 * Everything here is a pure function or works on a caller-owned struct: callable from
 * any thread, one thread per struct at a time.
 */
#ifndef CKUBE_INTERNAL_UTIL_H
#define CKUBE_INTERNAL_UTIL_H

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- allocation (alloc.c) ------------------------------------------------ */

void *ck__malloc(size_t size);
void *ck__calloc(size_t n, size_t size);
void *ck__realloc(void *p, size_t size);
char *ck__strdup(const char *s);

/*
 * Makes the nth allocation from now fail (1 = the next one), and every one after it
 * when `sticky`; 0 turns the hook off. Returns how many allocations were made since the
 * last call, so a test can loop n = 1, 2, ... until an operation succeeds.
 */
unsigned long ck__alloc_fail_at(unsigned long n, bool sticky);

/*
 * How many ck__ allocations have failed on the calling thread so far (a real failure or
 * the hook's). A caller compares it before and after a call into a library that does
 * not report running out of memory reliably (jansson's parser, when jansson allocates
 * through ck__malloc: see json_set_alloc_funcs() in cmd/ckube).
 */
unsigned long ck__alloc_failures(void);

/*
 * While paused, the hook makes no allocation of the calling thread fail (nor counts it):
 * for calls into a library that does not survive a failed allocation (jansson 2.14's
 * parser). Returns whether it was paused before, to restore.
 */
bool ck__alloc_hook_pause(bool pause);

/* ---- the allocator (memory.c) -------------------------------------------- */

/* Sets up the allocator for a long-running server (glibc: a fixed mmap threshold). */
void ck__memory_setup(void);

/*
 * Gives the free memory of every allocator arena back to the system now: after
 * one request freed megabytes at once (a long list, many definitions).
 */
void ck__memory_release(void);

/*
 * The calling thread is about to wait, maybe long (a worker with an empty queue, a
 * watch with no events): the blocks its allocator cache holds go back to the arenas,
 * where other threads reuse them and whole free pages go back to the system. jemalloc
 * keeps up to some hundred KiB per thread that allocated, and an idle server has a
 * hundred such threads; nothing with glibc's allocator.
 */
void ck__memory_idle(void);

/*
 * "jemalloc", or "libc" when built with CKUBE_ALLOCATOR=libc or with a sanitizer
 * (whose allocator then stands behind libc's interface).
 */
const char *ck__memory_allocator(void);

/* ---- string map (strmap.c) --------------------------------------------- */

struct ck__strmap_entry {
    struct ck__strmap_entry *next;
    void *value;
    unsigned long hash;
    char key[]; /* the map's own copy */
};

struct ck__strmap {
    struct ck__strmap_entry **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t len;
};

/* An empty map needs no allocation: `struct ck__strmap m = {0};` is ready to use. */
void ck__strmap_release(struct ck__strmap *m);

/* Returns the entry for key, or NULL. */
struct ck__strmap_entry *ck__strmap_find(const struct ck__strmap *m, const char *key);

/*
 * Inserts key (copied) with value, or finds it when present. Returns the entry and sets
 * *ret_created, or NULL when out of memory (the map is unchanged).
 */
struct ck__strmap_entry *ck__strmap_put(struct ck__strmap *m, const char *key, void *value,
                                        bool *ret_created);

/*
 * Inserts key, which must be absent, with `extra` zeroed bytes (16-byte aligned) inside
 * the entry itself as its value (NULL value when extra is 0): one allocation for key and
 * payload, freed with the entry. Returns the entry, or NULL when out of memory (the map
 * is unchanged).
 */
struct ck__strmap_entry *ck__strmap_insert(struct ck__strmap *m, const char *key, size_t extra);

/* Removes and frees an entry of m (and its inline payload) without hashing again. */
void ck__strmap_remove_entry(struct ck__strmap *m, struct ck__strmap_entry *e);

/* Removes key; returns its value, or NULL when absent. */
void *ck__strmap_remove(struct ck__strmap *m, const char *key);

/* Iteration: for (e = ck__strmap_next(m, NULL, &i); e; e = ck__strmap_next(m, e, &i)). */
struct ck__strmap_entry *ck__strmap_next(const struct ck__strmap *m, struct ck__strmap_entry *e,
                                         size_t *bucket);

/* ---- growable buffer (buf.c) ------------------------------------------- */

#define CK__E2BIG (-E2BIG) /* a struct ck__buf would pass its cap */

/*
 * A byte string that grows by doubling. `struct ck__buf b = {0};` is an empty buffer
 * without a cap; `{.max = N}` one that refuses to hold more than N bytes. p is NULL
 * until the first append, then always NUL-terminated past len (so text appended to it
 * is a C string). The first failure is kept in err (CK_ENOMEM, or CK__E2BIG past max);
 * every append after it does nothing and returns it.
 */
struct ck__buf {
    char *p;
    size_t len, cap;
    size_t max; /* most bytes it may hold; 0: no cap */
    int err;    /* 0, or the first failure */
};

/* Appends n bytes of data. 0, or b->err. */
int ck__buf_add(struct ck__buf *b, const void *data, size_t n);

/* Appends a C string. 0, or b->err. */
int ck__buf_adds(struct ck__buf *b, const char *s);

/* Appends printf output. 0, or b->err (CK_EINVAL when the format itself fails). */
int ck__buf_printf(struct ck__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ck__buf_vprintf(struct ck__buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Drops the first n bytes (all of them when n >= len), keeping the memory. */
void ck__buf_consume(struct ck__buf *b, size_t n);

/*
 * Hands out the string (the caller frees it; "" when nothing was appended), or NULL
 * when an append failed (the bytes are freed). Either way b is empty again, its cap kept.
 */
char *ck__buf_take(struct ck__buf *b);

/* Frees the bytes; b is empty again, its cap kept. */
void ck__buf_release(struct ck__buf *b);

/* printf output as a new string (the caller frees it), or NULL when out of memory. */
char *ck__vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/*
 * A libcurl CURLOPT_WRITEFUNCTION appending to the struct ck__buf given as
 * CURLOPT_WRITEDATA: a failed append (cap, memory) makes libcurl fail the transfer with
 * CURLE_WRITE_ERROR, and b->err says why.
 */
size_t ck__buf_curl_write(char *data, size_t size, size_t nmemb, void *arg);

/* Called with each complete line, NUL-terminated in place of its '\n'; false stops. */
typedef bool (*ck__line_fn)(void *arg, const char *line, size_t len);

/*
 * Appends data[0..n) to b, then hands every complete line to fn and drops it from b;
 * a partial last line waits for the next call. False when b could not take the data or
 * fn asked to stop.
 */
bool ck__buf_lines(struct ck__buf *b, const char *data, size_t n, ck__line_fn fn, void *arg);

/* ---- the protobuf wire format (protowire.c) ------------------------------ */

/* Wire types of a tag. */
enum ck__pb_wire { CK__PB_VARINT = 0, CK__PB_FIXED64 = 1, CK__PB_LEN = 2, CK__PB_FIXED32 = 5 };

void ck__pb_put_varint(struct ck__buf *b, uint64_t v);
void ck__pb_put_tag(struct ck__buf *b, uint32_t number, enum ck__pb_wire wire);
/* n (4 or 8) bytes of v, little-endian (after its tag). */
void ck__pb_put_fixed(struct ck__buf *b, uint64_t v, size_t n);
/* A length-delimited field: tag, length, data. */
void ck__pb_put_bytes(struct ck__buf *b, uint32_t number, const void *data, size_t len);
/* A varint field (int64 as two's complement, bool as 1), left out when 0 as proto3 does. */
void ck__pb_put_uint(struct ck__buf *b, uint32_t number, uint64_t v);
size_t ck__pb_varint_size(uint64_t v);
/* Starts a length-delimited field whose content is appended next; ck__pb_end_len() closes it. */
size_t ck__pb_begin_len(struct ck__buf *b, uint32_t number);
void ck__pb_end_len(struct ck__buf *b, size_t start);

/* A cursor over untrusted bytes [p, end). */
struct ck__pb_reader {
    const unsigned char *p, *end;
};

/* Each false when the bytes are truncated or malformed; the cursor is then unusable. */
bool ck__pb_get_varint(struct ck__pb_reader *r, uint64_t *ret);
bool ck__pb_get_fixed(struct ck__pb_reader *r, size_t n, uint64_t *ret);
/* A length-delimited field's content as a reader of its own. */
bool ck__pb_get_len(struct ck__pb_reader *r, struct ck__pb_reader *ret);
/* Skips a field of the given wire type (not groups). */
bool ck__pb_skip(struct ck__pb_reader *r, unsigned wire);
/* The next field's number and wire type: 1, 0 at the end, -1 for a malformed tag. */
int ck__pb_next(struct ck__pb_reader *r, uint32_t *number, unsigned *wire);

/* ---- gRPC over h2c (grpc.c) --------------------------------------------------- */

struct ck__grpc_conn;

/* What a call answered: its bytes (length-prefixed messages) and gRPC status. */
struct ck__grpc_answer {
    struct ck__buf body; /* set .max before the call */
    bool status_seen;
    int status;
    char message[400];
    bool refused; /* a failed call that the server refused unprocessed (HTTP/2 REFUSED_STREAM) */
};

/*
 * A connection to endpoint: "host:port" or "[IPv6]:port" (TCP), or "unix:///path/to/socket" (a unix
 * socket, as kubelet's --container-runtime-endpoint names one). 0 and *ret (close it
 * with ck__grpc_close()); CK_EIO (nothing was sent) or CK_ENOMEM with why set.
 */
int ck__grpc_connect(const char *endpoint, int timeout_ms, struct ck__grpc_conn **ret, char *why,
                     size_t why_len);

/*
 * Calls path (/package.Service/Method) with one message. 0 when the call
 * completed (answer->status says how); CK_EIO when the transport failed, with
 * why set: the request may have reached the server, and the connection is dead.
 */
int ck__grpc_call(struct ck__grpc_conn *c, const char *path, const void *msg, size_t msg_len,
                  int timeout_ms, struct ck__grpc_answer *answer, char *why, size_t why_len);

/* Takes bytes of a streaming call's answer as they arrive; false ends the connection. */
typedef bool (*ck__grpc_data_fn)(void *arg, const void *data, size_t len);

/*
 * Starts a streaming call on c with msg as its first message. The request
 * side stays open for ck__grpc_stream_send(); the answer's bytes go to fn,
 * its status to answer (whose body stays unused). 0, or CK_EIO / CK_ENOMEM.
 */
int ck__grpc_stream_open(struct ck__grpc_conn *c, const char *path, const void *msg, size_t msg_len,
                         ck__grpc_data_fn fn, void *arg, struct ck__grpc_answer *answer, char *why,
                         size_t why_len);

/* Queues one more message on an open streaming call (sent by the next run). */
int ck__grpc_stream_send(struct ck__grpc_conn *c, const void *msg, size_t msg_len);

/*
 * One turn of a streaming call: sends what is queued, waits up to timeout_ms
 * for the server or for wake_fd (>= 0) to become readable (the caller drains it),
 * and hands on what arrived. 1 while the call goes on; 0 when it ended
 * normally (its status in the answer), CK_EIO when it or the connection broke.
 */
int ck__grpc_stream_run(struct ck__grpc_conn *c, int wake_fd, int timeout_ms, char *why,
                        size_t why_len);

/* False once the connection cannot carry another call (closed, GOAWAY, an error). */
bool ck__grpc_usable(struct ck__grpc_conn *c);

/* Closes the connection; NULL is a no-op. */
void ck__grpc_close(struct ck__grpc_conn *c);

/*
 * The one message of a unary answer's bytes: false unless they are exactly one
 * uncompressed length-prefixed message.
 */
bool ck__grpc_unary_message(const struct ck__buf *body, struct ck__pb_reader *ret);

/*
 * A gRPC status code's name as Go's codes.Code prints it: "NotFound"; out of range
 * "Code(99)", written into buf (24 bytes are enough), which is then returned.
 */
const char *ck__grpc_code_name(int code, char *buf, size_t size);

/* ---- files (file.c) ------------------------------------------------------ */

/*
 * Reads the whole file at path into *ret (NUL-terminated, the caller frees it) and its
 * length into *ret_len. Returns 0, the negated errno of opening it (CK_ENOENT, -EACCES,
 * ...), CK__E2BIG when it holds more than max bytes, CK_ENOMEM, or CK_EIO when reading
 * fails; the outputs are untouched then.
 */
int ck__read_file(const char *path, size_t max, char **ret, size_t *ret_len);

/*
 * Replaces the file at path with len bytes of data, atomically and durably: a
 * temporary file next to it is created exclusively (O_EXCL | O_NOFOLLOW | O_CLOEXEC,
 * never through a symlink) with mode, written, fsync'ed and renamed over path, and the
 * directory fsync'ed. A symlink at path itself is replaced, not followed. Returns 0,
 * CK_ENOMEM, or a negated errno (the temporary file is removed then).
 */
int ck__write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/*
 * Whether path is a directory fit to hold private data: a directory (not a symlink to
 * one), owned by the effective user and writable by nobody else. 0, -ENOTDIR, -EPERM
 * (another owner, or group or others may write), or the negated errno of lstat().
 */
int ck__check_private_dir(const char *path);

/*
 * Removes name (one path component) in the directory open as dir_fd, and all below it
 * when it is a directory, never following a symlink (a link is removed as a link) and
 * never crossing into another filesystem (-EXDEV: such a directory and those holding it
 * stay). 0; -EINVAL for a name that is not one component; else the first negated errno
 * (-ENOENT when name is not there), having removed what it could.
 */
int ck__remove_tree_at(int dir_fd, const char *name);

/* ---- object metadata (meta.c) ------------------------------------------ */

/* obj.metadata[field] when it is a string, else NULL; borrowed from obj. NULL-safe. */
const char *ck__meta_str(const json_t *obj, const char *field);

/* ---- RFC 3339 times (timefmt.c) ----------------------------------------- */

/* Room for the longest time ck__time_format() writes, NUL included. */
#define CK__TIME_LEN 40

/*
 * Parses an RFC 3339 date-time as Go's time.Parse(time.RFC3339) does: exactly
 * YYYY-MM-DDTHH:MM:SS, optional fraction (at least one digit; beyond microseconds
 * truncated), then Z or +hh:mm / -hh:mm, nothing after; the date must exist. Sets
 * *ret_sec to seconds since the epoch (UTC) and *ret_usec (may be NULL) to the
 * microseconds. Returns 0 or CK_EINVAL (s NULL, or not such a time: outputs untouched).
 */
int ck__time_parse(const char *s, int64_t *ret_sec, long *ret_usec);

/*
 * Writes sec (and, when usec >= 0, usec as six digits: metav1.MicroTime) as UTC,
 * "2006-01-02T15:04:05Z" / "2006-01-02T15:04:05.000000Z", as metav1.Time marshals.
 * Returns buf. size must hold the text and its NUL (21 bytes for a Time, 28 for a
 * MicroTime; CK__TIME_LEN always does), else the text is cut short.
 */
const char *ck__time_format(int64_t sec, long usec, char *buf, size_t size);

/* ---- Go's strconv (strconv.c) ------------------------------------------- */

/*
 * Appends before, text and after (each may be NULL) to the field path of len bytes
 * in buf (size bytes), as much as fits, always NUL-terminated; returns the new
 * length (at most size - 1). ck__path_push(buf, size, len, len ? "." : "", "image",
 * NULL) for a field, ck__path_push_index() for "[3]".
 */
size_t ck__path_push(char *buf, size_t size, size_t len, const char *before, const char *text,
                     const char *after);
size_t ck__path_push_index(char *buf, size_t size, size_t len, size_t i);

/*
 * strconv.ParseBool: 1 t T TRUE true True are true, 0 f F FALSE false False false.
 * Returns true and sets *ret for those, false (and leaves *ret) for anything else.
 */
bool ck__parse_bool(const char *s, bool *ret);

/*
 * Go's %q for the strings our messages quote: wraps s in double quotes, escapes '"' and
 * '\\' with a backslash, control bytes and DEL as \xNN; other bytes (UTF-8 included)
 * pass through. Writes at most size bytes, always a closed quotation when size >= 3: when
 * s does not fit it is cut between characters. Returns the length the whole quotation
 * needs (without the NUL), like snprintf.
 */
size_t ck__quote(const char *s, char *buf, size_t size);

/* The same, allocated (ck__malloc); the caller frees it. NULL when out of memory. */
char *ck__quote_dup(const char *s);

/* ---- JSON output that is whole or nothing (json_dump.c) ------------------- */

/*
 * json_dumps() that never returns cut-short text: jansson 2.14's json_dumps()
 * can drop pieces of its output when an allocation fails midway and still
 * return a string, which would store or send corrupt JSON. This measures the
 * text first, then writes it into one buffer from ck__malloc. Returns the
 * NUL-terminated text (caller frees; its length in *ret_len when not NULL),
 * or NULL when out of memory or json cannot be encoded.
 */
char *ck__json_dumps(const json_t *json, size_t flags, size_t *ret_len);

/*
 * A deep copy of json, as json_deep_copy() makes it but without checking for a
 * reference cycle (no tree of ours has one): about twice as fast. NULL for NULL,
 * when out of memory, or deeper than jansson's parser goes.
 */
json_t *ck__json_copy(const json_t *json);

/* The object of array whose string member key is value ("name": a container), or NULL. */
json_t *ck__json_find(const json_t *array, const char *key, const char *value);

/*
 * Sets the condition of type in obj's status.conditions (both made when missing, the
 * condition appended when absent) to status, reason and message, as Kubernetes' condition
 * helpers do: its lastTransitionTime becomes now (seconds since the epoch) only when the
 * status changes or the condition is new. 0, or CK_ENOMEM with obj half-changed.
 */
int ck__json_set_condition(json_t *obj, const char *type, const char *status, const char *reason,
                           const char *message, long long now);

/*
 * Sorts array's elements in place with qsort()'s cmp, which is given two json_t **.
 * 0, or CK_ENOMEM with array unchanged.
 */
int ck__json_array_sort(json_t *array, int (*cmp)(const void *, const void *));

/*
 * References on objects several threads share (informers' caches, admission's kept
 * lists). jansson's json_incref/json_decref change the count atomically but first read
 * it with a plain load (to skip its static singletons), which is a data race once several
 * threads share the object; these use atomics throughout.
 */
static inline json_t *ck__json_ref(const json_t *obj)
{
    json_t *o = (json_t *)obj; /* the count is the one mutable part of a shared object */
    if (o && __atomic_load_n(&o->refcount, __ATOMIC_RELAXED) != (size_t)-1)
        __atomic_add_fetch(&o->refcount, 1, __ATOMIC_RELAXED);
    return o;
}

static inline void ck__json_unref(const json_t *obj)
{
    json_t *o = (json_t *)obj;
    if (o && __atomic_load_n(&o->refcount, __ATOMIC_RELAXED) != (size_t)-1 &&
        __atomic_sub_fetch(&o->refcount, 1, __ATOMIC_ACQ_REL) == 0)
        json_delete(o);
}

/* ---- YAML both ways (yaml.c) ------------------------------------------------ */

struct ck_err;

/*
 * Parses a YAML (or JSON) document into a jansson value: mappings become objects,
 * sequences arrays; plain scalars true/false/null and numbers become JSON booleans, null
 * and numbers, every other scalar a string. Returns 0 and a new reference in *ret_json,
 * or CK_EINVAL with the parser's line in *reterr (CK_ENOMEM). Only the first document
 * is read; nesting deeper than 64 levels is refused.
 */
int ck__yaml_to_json(const char *text, size_t len, json_t **ret_json, struct ck_err *reterr);

/*
 * Writes json as YAML the way kube-apiserver answers Accept: application/yaml
 * (sigs.k8s.io/yaml's JSONToYAML): block style, keys sorted as go-yaml sorts them,
 * strings quoted only where a YAML 1.1 reader would take them for something else,
 * multi-line strings as literal blocks, ending with a line break. Returns the text
 * (caller frees; its length in *ret_len when not NULL), or NULL when out of memory or
 * nested deeper than 64 levels.
 */
char *ck__json_to_yaml(const json_t *json, size_t *ret_len);

/* ---- Go regular expressions (regex.cc) ---------------------------------------- */

/* A compiled expression: immutable, searched from any number of threads at once. */
struct ck__regex;

/* Valid in Go but bigger than this engine's memory budget (docs/differences.md). */
#define CK__REGEX_TOO_LARGE (-E2BIG)

/*
 * Compiles the len bytes of pattern as Go's regexp.Compile does (RE2 syntax, UTF-8,
 * leftmost-first). Returns 0 and *ret_re (free it with ck__regex_free()); CK_EINVAL
 * when Go refuses the pattern, or CK__REGEX_TOO_LARGE, each with *ret_error (when
 * ret_error is not NULL) set to Go's message, "error parsing regexp: missing closing ]:
 * `[a`", which the caller frees (NULL if even that could not be allocated); CK_ENOMEM.
 * On failure *ret_re is left alone.
 */
int ck__regex_compile(const char *pattern, size_t len, struct ck__regex **ret_re, char **ret_error);

/*
 * Searches the len bytes of text for re anywhere (Go's MatchString): 1 when found,
 * 0 when not, CK_ENOMEM. Time is linear in len. text should be UTF-8, as every JSON
 * string is (an invalid byte matches nothing here, where Go reads it as U+FFFD).
 */
int ck__regex_search(const struct ck__regex *re, const char *text, size_t len);

/*
 * The leftmost-first match of re in the len bytes of text that starts at or after byte
 * `from` (anchors still see the whole text, as Go's FindAll does): 1 with its byte
 * range in *ret_start and *ret_end, 0 when there is none, CK_ENOMEM. For CEL's find().
 */
int ck__regex_find(const struct ck__regex *re, const char *text, size_t len, size_t from,
                   size_t *ret_start, size_t *ret_end);

/* Frees re; NULL is a no-op. Returns NULL. */
struct ck__regex *ck__regex_free(struct ck__regex *re);

#endif /* CKUBE_INTERNAL_UTIL_H */
