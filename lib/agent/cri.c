/*
 * cri.c - the agent's client of a container runtime's CRI (k8s.io/cri-api,
 * package runtime.v1), as kubelet's remote runtime and image services
 * (k8s.io/cri-client pkg/remote_runtime.go, remote_image.go) call it: unary
 * gRPC calls over HTTP/2 on the runtime's unix socket (libckube-util's
 * grpc.c), messages written and read here on the protobuf wire layer with the
 * field numbers of cri-api's pkg/apis/runtime/v1/api.proto (v0.32).
 *
 * What exists so far: RuntimeService Version and Status; ImageService
 * ListImages, ImageStatus, PullImage, RemoveImage and ImageFsInfo. Pod
 * sandboxes, containers, exec and stats come with the agent's CRI runtime.
 *
 * Answers are untrusted: each is capped (16 MiB, kubelet's own limit on a CRI
 * message), must be exactly one uncompressed gRPC message, and is decoded
 * with bounded readers that never pass its end; a string with a NUL byte in
 * it, a field of the wrong wire type or a length past the end makes the whole
 * answer malformed (CK_EIO), never a partial result. Fields this client does
 * not know are skipped, as protobuf says. A failed call's error carries its
 * gRPC status as Go's gRPC prints it ("rpc error: code = NotFound desc =
 * ..."), the words kubelet's events show.
 *
 * Threading: a client holds one connection per endpoint (runtime, image; one
 * when both are the same) under one lock, so calls from several threads run
 * one at a time. A connection that fails is dropped and the next call dials
 * again.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* kubelet's maxMsgSize for CRI answers (cri-client utils.go), plus the gRPC prefix */
#define MAX_ANSWER ((16u << 20) + 5)

struct ck__cri {
    char *endpoint[2]; /* runtime, image */
    int timeout_ms;
    pthread_mutex_t lock;
    struct ck__grpc_conn *conn[2];
};

enum { RUNTIME = 0, IMAGE = 1 };

/* ---- runtime.v1's messages (api.proto of cri-api v0.32) -------------------------- */

/* Field numbers by message. */
enum { VERSION_REQ_VERSION = 1 };
enum { VERSION_VERSION = 1, VERSION_NAME = 2, VERSION_RT_VERSION = 3, VERSION_API_VERSION = 4 };
enum { STATUS_REQ_VERBOSE = 1 };
enum { STATUS_STATUS = 1 };             /* StatusResponse */
enum { RUNTIME_STATUS_CONDITIONS = 1 }; /* RuntimeStatus */
enum { COND_TYPE = 1, COND_STATUS = 2, COND_REASON = 3, COND_MESSAGE = 4 };
enum { SPEC_IMAGE = 1 };             /* ImageSpec */
enum { FILTER_IMAGE = 1 };           /* ImageFilter */
enum { LIST_IMAGES_REQ_FILTER = 1 }; /* ListImagesRequest */
enum { LIST_IMAGES_IMAGES = 1 };     /* ListImagesResponse */
enum {                               /* Image */
       IMAGE_ID = 1,
       IMAGE_REPO_TAGS = 2,
       IMAGE_REPO_DIGESTS = 3,
       IMAGE_SIZE = 4,
       IMAGE_UID = 5,
       IMAGE_USERNAME = 6,
       IMAGE_PINNED = 8
};
enum { WRAPPER_VALUE = 1 }; /* Int64Value, UInt64Value */
enum { IMAGE_STATUS_REQ_IMAGE = 1, IMAGE_STATUS_REQ_VERBOSE = 2 };
enum { IMAGE_STATUS_IMAGE = 1 }; /* ImageStatusResponse */
enum { PULL_REQ_IMAGE = 1, PULL_REQ_AUTH = 2 };
enum { PULL_IMAGE_REF = 1 }; /* PullImageResponse */
enum {                       /* AuthConfig */
       AUTH_USERNAME = 1,
       AUTH_PASSWORD = 2,
       AUTH_AUTH = 3,
       AUTH_SERVER = 4,
       AUTH_IDENTITY_TOKEN = 5,
       AUTH_REGISTRY_TOKEN = 6
};
enum { REMOVE_REQ_IMAGE = 1 };
enum { FSINFO_IMAGE_FS = 1, FSINFO_CONTAINER_FS = 2 }; /* ImageFsInfoResponse */
enum { FS_TIMESTAMP = 1, FS_ID = 2, FS_USED_BYTES = 3, FS_INODES_USED = 4 };
enum { FS_ID_MOUNTPOINT = 1 }; /* FilesystemIdentifier */

/* ---- writing ---------------------------------------------------------------------- */

/* A string field, left out when empty as proto3 writes it. */
static void put_string(struct ck__buf *b, uint32_t number, const char *s)
{
    if (s && *s)
        ck__pb_put_bytes(b, number, s, strlen(s));
}

/* An ImageSpec {image} as field number. */
static void put_image_spec(struct ck__buf *b, uint32_t number, const char *image)
{
    size_t at = ck__pb_begin_len(b, number);
    put_string(b, SPEC_IMAGE, image);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_version(struct ck__buf *b, const char *version)
{
    put_string(b, VERSION_REQ_VERSION, version);
}

void ck__cri_encode_status(struct ck__buf *b, bool verbose)
{
    ck__pb_put_uint(b, STATUS_REQ_VERBOSE, verbose);
}

void ck__cri_encode_list_images(struct ck__buf *b, const char *image)
{
    if (!image)
        return;
    size_t at = ck__pb_begin_len(b, LIST_IMAGES_REQ_FILTER);
    put_image_spec(b, FILTER_IMAGE, image);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_image_status(struct ck__buf *b, const char *image, bool verbose)
{
    put_image_spec(b, IMAGE_STATUS_REQ_IMAGE, image);
    ck__pb_put_uint(b, IMAGE_STATUS_REQ_VERBOSE, verbose);
}

void ck__cri_encode_pull_image(struct ck__buf *b, const char *image,
                               const struct ck__cri_auth *auth)
{
    put_image_spec(b, PULL_REQ_IMAGE, image);
    if (!auth)
        return;
    size_t at = ck__pb_begin_len(b, PULL_REQ_AUTH);
    put_string(b, AUTH_USERNAME, auth->username);
    put_string(b, AUTH_PASSWORD, auth->password);
    put_string(b, AUTH_AUTH, auth->auth);
    put_string(b, AUTH_SERVER, auth->server_address);
    put_string(b, AUTH_IDENTITY_TOKEN, auth->identity_token);
    put_string(b, AUTH_REGISTRY_TOKEN, auth->registry_token);
    ck__pb_end_len(b, at);
}

void ck__cri_encode_remove_image(struct ck__buf *b, const char *image)
{
    put_image_spec(b, REMOVE_REQ_IMAGE, image);
}

/* ---- reading ---------------------------------------------------------------------- */

/* A length-delimited field's content, or false. */
static bool sub(struct ck__pb_reader *r, unsigned wire, struct ck__pb_reader *ret)
{
    return wire == CK__PB_LEN && ck__pb_get_len(r, ret);
}

static bool varint(struct ck__pb_reader *r, unsigned wire, uint64_t *ret)
{
    return wire == CK__PB_VARINT && ck__pb_get_varint(r, ret);
}

/*
 * A string field into *dst (a later occurrence replaces an earlier one, as
 * protobuf says). CK_EIO when malformed or holding a NUL, CK_ENOMEM.
 */
static int string(struct ck__pb_reader *r, unsigned wire, char **dst)
{
    struct ck__pb_reader s;
    if (!sub(r, wire, &s))
        return CK_EIO;
    size_t n = (size_t)(s.end - s.p);
    if (memchr(s.p, '\0', n))
        return CK_EIO;
    char *copy = ck__malloc(n + 1);
    if (!copy)
        return CK_ENOMEM;
    memcpy(copy, s.p, n);
    copy[n] = '\0';
    free(*dst);
    *dst = copy;
    return 0;
}

/* Appends one element to an array of size elements; its new slot, zeroed, or NULL. */
static void *grow(void **items, size_t *n, size_t size)
{
    void *p = ck__realloc(*items, (*n + 1) * size);
    if (!p)
        return NULL;
    *items = p;
    memset((char *)p + *n * size, 0, size);
    return (char *)p + (*n)++ * size;
}

/* A repeated string field: one more element. */
static int repeated_string(struct ck__pb_reader *r, unsigned wire, char ***items, size_t *n)
{
    char **slot = grow((void **)items, n, sizeof(char *));
    if (!slot)
        return CK_ENOMEM;
    int e = string(r, wire, slot);
    if (e < 0)
        (*n)--; /* the slot holds nothing */
    return e;
}

/* Skips a field this client does not read. */
static int skip(struct ck__pb_reader *r, unsigned wire)
{
    return ck__pb_skip(r, wire) ? 0 : CK_EIO;
}

/*
 * Reads one field (number no, wire type wire) of a message into ctx, or skips
 * it: 0, CK_EIO when malformed, CK_ENOMEM.
 */
typedef int field_fn(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire);

/* Every field of the message in r, through field(); CK_EIO when r is cut. */
static int each_field(struct ck__pb_reader r, field_fn *field, void *ctx)
{
    uint32_t no;
    unsigned wire;
    int more, e = 0;
    while (e == 0 && (more = ck__pb_next(&r, &no, &wire)) == 1)
        e = field(ctx, &r, no, wire);
    return e < 0 ? e : more < 0 ? CK_EIO : 0;
}

/* A message field read into ctx by field(). */
static int message(struct ck__pb_reader *r, unsigned wire, field_fn *field, void *ctx)
{
    struct ck__pb_reader m;
    return sub(r, wire, &m) ? each_field(m, field, ctx) : CK_EIO;
}

/* A repeated message field: one more element of size bytes, read by field(). */
static int repeated_message(struct ck__pb_reader *r, unsigned wire, void **items, size_t *n,
                            size_t size, field_fn *field)
{
    struct ck__pb_reader m;
    if (!sub(r, wire, &m))
        return CK_EIO;
    void *item = grow(items, n, size);
    return item ? each_field(m, field, item) : CK_ENOMEM;
}

static int wrapper_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no != WRAPPER_VALUE ? skip(r, wire) : varint(r, wire, ctx) ? 0 : CK_EIO;
}

/* The value of an Int64Value or UInt64Value field (0 when it has none). */
static int wrapper(struct ck__pb_reader *r, unsigned wire, uint64_t *ret)
{
    *ret = 0;
    return message(r, wire, wrapper_field, ret);
}

/* A bool field. */
static int boolean(struct ck__pb_reader *r, unsigned wire, bool *ret)
{
    uint64_t v;
    if (!varint(r, wire, &v))
        return CK_EIO;
    *ret = v != 0;
    return 0;
}

static int version_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_version *v = ctx;
    switch (no) {
    case VERSION_VERSION:
        return string(r, wire, &v->version);
    case VERSION_NAME:
        return string(r, wire, &v->runtime_name);
    case VERSION_RT_VERSION:
        return string(r, wire, &v->runtime_version);
    case VERSION_API_VERSION:
        return string(r, wire, &v->runtime_api_version);
    default:
        return skip(r, wire);
    }
}

int ck__cri_decode_version(struct ck__pb_reader r, struct ck__cri_version *ret)
{
    struct ck__cri_version v = {0};
    int e = each_field(r, version_field, &v);
    if (e < 0)
        ck__cri_version_release(&v);
    else
        *ret = v;
    return e;
}

void ck__cri_version_release(struct ck__cri_version *v)
{
    free(v->version);
    free(v->runtime_name);
    free(v->runtime_version);
    free(v->runtime_api_version);
    *v = (struct ck__cri_version){0};
}

static int condition_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_condition *c = ctx;
    switch (no) {
    case COND_TYPE:
        return string(r, wire, &c->type);
    case COND_STATUS:
        return boolean(r, wire, &c->status);
    case COND_REASON:
        return string(r, wire, &c->reason);
    case COND_MESSAGE:
        return string(r, wire, &c->message);
    default:
        return skip(r, wire);
    }
}

/* A RuntimeStatus's field: its conditions are appended to the status. */
static int runtime_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_status *s = ctx;
    if (no != RUNTIME_STATUS_CONDITIONS)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&s->conditions, &s->n_conditions,
                            sizeof(*s->conditions), condition_field);
}

static int status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    if (no == STATUS_STATUS)
        return message(r, wire, runtime_status_field, ctx);
    return skip(r, wire); /* info (verbose), runtime handlers, features */
}

int ck__cri_decode_status(struct ck__pb_reader r, struct ck__cri_status *ret)
{
    struct ck__cri_status s = {0};
    int e = each_field(r, status_field, &s);
    if (e < 0)
        ck__cri_status_release(&s);
    else
        *ret = s;
    return e;
}

void ck__cri_status_release(struct ck__cri_status *s)
{
    for (size_t i = 0; i < s->n_conditions; i++) {
        free(s->conditions[i].type);
        free(s->conditions[i].reason);
        free(s->conditions[i].message);
    }
    free(s->conditions);
    *s = (struct ck__cri_status){0};
}

const struct ck__cri_condition *ck__cri_status_condition(const struct ck__cri_status *s,
                                                         const char *type)
{
    for (size_t i = 0; i < s->n_conditions; i++)
        if (s->conditions[i].type && strcmp(s->conditions[i].type, type) == 0)
            return &s->conditions[i];
    return NULL;
}

/* An Image's field (the image zeroed by the caller, released by it on failure too). */
static int image_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_image *img = ctx;
    uint64_t v;
    int e;
    switch (no) {
    case IMAGE_ID:
        return string(r, wire, &img->id);
    case IMAGE_REPO_TAGS:
        return repeated_string(r, wire, &img->repo_tags, &img->n_repo_tags);
    case IMAGE_REPO_DIGESTS:
        return repeated_string(r, wire, &img->repo_digests, &img->n_repo_digests);
    case IMAGE_SIZE:
        return varint(r, wire, &img->size) ? 0 : CK_EIO;
    case IMAGE_UID:
        e = wrapper(r, wire, &v);
        img->has_uid = e == 0;
        img->uid = (int64_t)v;
        return e;
    case IMAGE_USERNAME:
        return string(r, wire, &img->username);
    case IMAGE_PINNED:
        return boolean(r, wire, &img->pinned);
    default:
        return skip(r, wire); /* spec */
    }
}

void ck__cri_image_release(struct ck__cri_image *img)
{
    free(img->id);
    for (size_t i = 0; i < img->n_repo_tags; i++)
        free(img->repo_tags[i]);
    free(img->repo_tags);
    for (size_t i = 0; i < img->n_repo_digests; i++)
        free(img->repo_digests[i]);
    free(img->repo_digests);
    free(img->username);
    *img = (struct ck__cri_image){0};
}

static int list_images_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_images *l = ctx;
    if (no != LIST_IMAGES_IMAGES)
        return skip(r, wire);
    return repeated_message(r, wire, (void **)&l->items, &l->n, sizeof(*l->items), image_field);
}

int ck__cri_decode_list_images(struct ck__pb_reader r, struct ck__cri_images *ret)
{
    struct ck__cri_images l = {0};
    int e = each_field(r, list_images_field, &l);
    if (e < 0)
        ck__cri_images_release(&l);
    else
        *ret = l;
    return e;
}

void ck__cri_images_release(struct ck__cri_images *l)
{
    for (size_t i = 0; i < l->n; i++)
        ck__cri_image_release(&l->items[i]);
    free(l->items);
    *l = (struct ck__cri_images){0};
}

struct image_status {
    struct ck__cri_image image;
    bool found;
};

static int image_status_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct image_status *st = ctx;
    if (no != IMAGE_STATUS_IMAGE)
        return skip(r, wire); /* info (verbose) */
    st->found = true;         /* a repeated message field merges; the runtime sends one */
    return message(r, wire, image_field, &st->image);
}

int ck__cri_decode_image_status(struct ck__pb_reader r, struct ck__cri_image *ret, bool *ret_found)
{
    struct image_status st = {0};
    int e = each_field(r, image_status_field, &st);
    if (e < 0) {
        ck__cri_image_release(&st.image);
        return e;
    }
    *ret = st.image;
    *ret_found = st.found;
    return 0;
}

static int pull_image_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == PULL_IMAGE_REF ? string(r, wire, ctx) : skip(r, wire);
}

int ck__cri_decode_pull_image(struct ck__pb_reader r, char **ret_ref)
{
    char *ref = NULL;
    int e = each_field(r, pull_image_field, &ref);
    if (e < 0)
        free(ref);
    else
        *ret_ref = ref;
    return e;
}

static int fs_id_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    return no == FS_ID_MOUNTPOINT ? string(r, wire, ctx) : skip(r, wire);
}

static int fs_usage_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_fs_usage *u = ctx;
    uint64_t v;
    int e;
    switch (no) {
    case FS_TIMESTAMP:
        e = varint(r, wire, &v) ? 0 : CK_EIO;
        u->timestamp = (int64_t)v;
        return e;
    case FS_ID:
        return message(r, wire, fs_id_field, &u->mountpoint);
    case FS_USED_BYTES:
        e = wrapper(r, wire, &u->used_bytes);
        u->has_used_bytes = e == 0;
        return e;
    case FS_INODES_USED:
        e = wrapper(r, wire, &u->inodes_used);
        u->has_inodes_used = e == 0;
        return e;
    default:
        return skip(r, wire);
    }
}

static int fs_info_field(void *ctx, struct ck__pb_reader *r, uint32_t no, unsigned wire)
{
    struct ck__cri_fs_info *f = ctx;
    if (no == FSINFO_IMAGE_FS)
        return repeated_message(r, wire, (void **)&f->image_fs, &f->n_image_fs,
                                sizeof(*f->image_fs), fs_usage_field);
    if (no == FSINFO_CONTAINER_FS)
        return repeated_message(r, wire, (void **)&f->container_fs, &f->n_container_fs,
                                sizeof(*f->container_fs), fs_usage_field);
    return skip(r, wire);
}

int ck__cri_decode_fs_info(struct ck__pb_reader r, struct ck__cri_fs_info *ret)
{
    struct ck__cri_fs_info f = {0};
    int e = each_field(r, fs_info_field, &f);
    if (e < 0)
        ck__cri_fs_info_release(&f);
    else
        *ret = f;
    return e;
}

void ck__cri_fs_info_release(struct ck__cri_fs_info *f)
{
    for (size_t i = 0; i < f->n_image_fs; i++)
        free(f->image_fs[i].mountpoint);
    for (size_t i = 0; i < f->n_container_fs; i++)
        free(f->container_fs[i].mountpoint);
    free(f->image_fs);
    free(f->container_fs);
    *f = (struct ck__cri_fs_info){0};
}

void ck__cri_decode_answer(const unsigned char *p, size_t n)
{
    if (n == 0)
        return;
    struct ck__pb_reader r = {p + 1, p + n};
    struct ck__cri_version v;
    struct ck__cri_status s;
    struct ck__cri_images l;
    struct ck__cri_image img;
    struct ck__cri_fs_info f;
    bool found;
    char *ref;
    switch (p[0] % 6) {
    case 0:
        if (ck__cri_decode_version(r, &v) == 0)
            ck__cri_version_release(&v);
        break;
    case 1:
        if (ck__cri_decode_status(r, &s) == 0) {
            ck__cri_status_condition(&s, "RuntimeReady");
            ck__cri_status_release(&s);
        }
        break;
    case 2:
        if (ck__cri_decode_list_images(r, &l) == 0)
            ck__cri_images_release(&l);
        break;
    case 3:
        if (ck__cri_decode_image_status(r, &img, &found) == 0)
            ck__cri_image_release(&img);
        break;
    case 4:
        if (ck__cri_decode_pull_image(r, &ref) == 0)
            free(ref);
        break;
    default:
        if (ck__cri_decode_fs_info(r, &f) == 0)
            ck__cri_fs_info_release(&f);
    }
}

/* ---- calls ------------------------------------------------------------------------ */

/* gRPC's status codes by number, as Go's codes.Code prints them. */
static const char *const GRPC_CODES[] = {
    "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated"};

int ck__cri_status_error(const char *service, const char *method, int status, const char *message,
                         struct ck_err *reterr)
{
    char unknown[24];
    const char *name = GRPC_CODES[2];
    if (status >= 0 && (size_t)status < sizeof(GRPC_CODES) / sizeof(*GRPC_CODES)) {
        name = GRPC_CODES[status];
    } else { /* as Go's codes.Code.String() */
        snprintf(unknown, sizeof(unknown), "Code(%d)", status);
        name = unknown;
    }
    int code = status == 5 ? CK_ENOENT : status == 3 ? CK_EINVAL : CK_EIO;
    return ck_err_set(reterr, code, "cri: %s %s: rpc error: code = %s desc = %s", service, method,
                      name, message);
}

int ck__cri_open(const char *runtime_endpoint, const char *image_endpoint, int timeout_ms,
                 struct ck__cri **ret, struct ck_err *reterr)
{
    struct ck__cri *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "cri: out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->endpoint[RUNTIME] = ck__strdup(runtime_endpoint);
    c->endpoint[IMAGE] = ck__strdup(image_endpoint ? image_endpoint : runtime_endpoint);
    c->timeout_ms = timeout_ms;
    if (!c->endpoint[RUNTIME] || !c->endpoint[IMAGE]) {
        ck__cri_close(c);
        return ck_err_set(reterr, CK_ENOMEM, "cri: out of memory");
    }
    *ret = c;
    return 0;
}

struct ck__cri *ck__cri_close(struct ck__cri *c)
{
    if (!c)
        return NULL;
    pthread_mutex_destroy(&c->lock);
    for (int i = 0; i < 2; i++) {
        ck__grpc_close(c->conn[i]);
        free(c->endpoint[i]);
    }
    free(c);
    return NULL;
}

/*
 * Calls /runtime.v1.<service>/<method> with the message in req (released).
 * On success *ret holds the answer's bytes and *msg reads its message (the
 * caller releases *ret); a failed call's error names the method and the
 * runtime's gRPC status.
 */
static int call(struct ck__cri *c, int which, const char *method, struct ck__buf *req,
                int timeout_ms, struct ck__buf *ret, struct ck__pb_reader *msg, struct ck_err *err)
{
    const char *service = which == RUNTIME ? "RuntimeService" : "ImageService";
    if (req->err) {
        ck__buf_release(req);
        return ck_err_set(err, CK_ENOMEM, "cri: out of memory");
    }
    char path[96], why[256];
    snprintf(path, sizeof(path), "/runtime.v1.%s/%s", service, method);
    struct ck__grpc_answer a = {.body = {.max = MAX_ANSWER}};
    int r = 0;
    pthread_mutex_lock(&c->lock);
    /* the image endpoint is the runtime's unless told otherwise: one connection */
    int slot =
        which == IMAGE && strcmp(c->endpoint[IMAGE], c->endpoint[RUNTIME]) == 0 ? RUNTIME : which;
    struct ck__grpc_conn **conn = &c->conn[slot];
    if (*conn && !ck__grpc_usable(*conn)) {
        ck__grpc_close(*conn);
        *conn = NULL;
    }
    if (!*conn && ck__grpc_connect(c->endpoint[which], c->timeout_ms < 5000 ? c->timeout_ms : 5000,
                                   conn, why, sizeof(why)) < 0) {
        *conn = NULL;
        r = ck_err_set(err, CK_EIO, "cri: %s %s: cannot connect to %s: %s", service, method,
                       c->endpoint[which], why);
    } else if (ck__grpc_call(*conn, path, req->p, req->len, timeout_ms, &a, why, sizeof(why)) < 0) {
        ck__grpc_close(*conn);
        *conn = NULL;
        r = ck_err_set(err, CK_EIO, "cri: %s %s: %s: %s", service, method, c->endpoint[which], why);
    }
    pthread_mutex_unlock(&c->lock);
    ck__buf_release(req);
    if (r < 0)
        goto out_release;
    if (!a.status_seen) {
        r = ck_err_set(err, CK_EIO, "cri: %s %s: the answer has no gRPC status", service, method);
    } else if (a.status != 0) {
        r = ck__cri_status_error(service, method, a.status, a.message, err);
    } else if (!ck__grpc_unary_message(&a.body, msg)) {
        r = ck_err_set(err, CK_EIO, "cri: %s %s: the answer is not one gRPC message", service,
                       method);
    }
    if (r == 0) {
        *ret = a.body;
        return 0;
    }
out_release:
    ck__buf_release(&a.body);
    return r;
}

/* What a decoder returned, as the call's error. */
static int decoded(int e, const char *method, struct ck_err *err)
{
    if (e == CK_ENOMEM)
        return ck_err_set(err, CK_ENOMEM, "cri: out of memory");
    if (e < 0)
        return ck_err_set(err, CK_EIO, "cri: %s: malformed answer", method);
    return 0;
}

int ck__cri_version(struct ck__cri *c, const char *version, struct ck__cri_version *ret,
                    struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_version(&req, version);
    int r = call(c, RUNTIME, "Version", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_version(msg, ret), "RuntimeService Version", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_status(struct ck__cri *c, struct ck__cri_status *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_status(&req, false);
    int r = call(c, RUNTIME, "Status", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_status(msg, ret), "RuntimeService Status", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_list_images(struct ck__cri *c, const char *image, struct ck__cri_images *ret,
                        struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_list_images(&req, image);
    int r = call(c, IMAGE, "ListImages", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_list_images(msg, ret), "ImageService ListImages", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_image_status(struct ck__cri *c, const char *image, struct ck__cri_image *ret,
                         bool *ret_found, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_image_status(&req, image, false);
    int r = call(c, IMAGE, "ImageStatus", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_image_status(msg, ret, ret_found), "ImageService ImageStatus",
                reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_pull_image(struct ck__cri *c, const char *image, const struct ck__cri_auth *auth,
                       int timeout_ms, char **ret_ref, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_pull_image(&req, image, auth);
    int r = call(c, IMAGE, "PullImage", &req, timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_pull_image(msg, ret_ref), "ImageService PullImage", reterr);
    ck__buf_release(&body);
    return r;
}

int ck__cri_remove_image(struct ck__cri *c, const char *image, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    ck__cri_encode_remove_image(&req, image);
    int r = call(c, IMAGE, "RemoveImage", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    ck__buf_release(&body); /* RemoveImageResponse is empty */
    return 0;
}

int ck__cri_image_fs_info(struct ck__cri *c, struct ck__cri_fs_info *ret, struct ck_err *reterr)
{
    struct ck__buf req = {0}, body;
    struct ck__pb_reader msg;
    int r = call(c, IMAGE, "ImageFsInfo", &req, c->timeout_ms, &body, &msg, reterr);
    if (r < 0)
        return r;
    r = decoded(ck__cri_decode_fs_info(msg, ret), "ImageService ImageFsInfo", reterr);
    ck__buf_release(&body);
    return r;
}
