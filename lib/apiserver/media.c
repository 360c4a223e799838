/*
 * media.c - the wire formats of the API: which one a request's Accept asks
 * for, which one its Content-Type says the body is in, and the step that
 * turns an answer into that format.
 *
 * Mirrors apiserver's endpoints/handlers/negotiation and the serializers
 * of apimachinery's CodecFactory. Every format is one row of `codecs`: its
 * media type, whether it can carry a watch stream, how it encodes an answer
 * and how it decodes a request body. Handlers build every answer as JSON;
 * ck__media_encode() turns it into the negotiated format just before it is
 * queued, so adding a format is adding a row. JSON is the first row: what
 * any type, any application type, a missing Accept and a body without
 * Content-Type mean, as in Kubernetes.
 *
 * What the rows do, as kube-apiserver 1.32 does it:
 * - JSON ends every body with a line break (Go's json.Encoder); pretty
 *   output (?pretty=true, `pretty=1` in Accept, or a User-Agent starting
 *   with curl, Wget or Mozilla/) is indented by two spaces and ends without
 *   one (json.MarshalIndent).
 * - YAML (application/yaml) is written as sigs.k8s.io/yaml writes it (see
 *   lib/util/yaml.c) and read into JSON before the body is decoded. It has
 *   no stream framing, so a watch asking only for YAML is a 406.
 *
 * Kubernetes' protobuf (application/vnd.kubernetes.protobuf, protobuf.c) is
 * no row: it needs the kind of the answer, so handlers that can answer in it
 * ask ck__negotiate_kind() and encode it themselves. Here an Accept entry of
 * it is the shape CK__ACCEPT_PROTOBUF where protobuf may be chosen (a kind
 * with a protobuf message), and passed over elsewhere (a custom resource),
 * as Kubernetes' negotiation does.
 *
 * An Accept entry's `as=`, `g=`, `v=` parameters (Table,
 * PartialObjectMetadata and its List) pick the shape of the answer; the
 * media type before them picks the row. The first entry the server can
 * answer wins.
 *
 * Threading: pure functions of one request, on the thread serving it.
 *
 * Tested in tests/apiserver/test_media.c (negotiation and encoding) and
 * tests/apiserver/test_wire.c (through a server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* JSON: compact with a final line break, or indented without one. */
static int encode_json(char *json, size_t len, bool pretty, char **ret, size_t *ret_len)
{
    if (pretty) {
        json_t *value = json_loadb(json, len, 0, NULL);
        char *text =
            value ? ck__json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER, ret_len) : NULL;
        json_decref(value);
        if (text) {
            free(json);
            *ret = text;
            return 0;
        }
        /* not something jansson reads (or no memory): the compact form still says it */
    }
    char *grown = ck__realloc(json, len + 2);
    if (!grown) {
        free(json);
        return CK_ENOMEM;
    }
    grown[len] = '\n';
    grown[len + 1] = '\0';
    *ret = grown;
    *ret_len = len + 1;
    return 0;
}

static int encode_yaml(char *json, size_t len, bool pretty, char **ret, size_t *ret_len)
{
    (void)pretty; /* Kubernetes' YAML serializer ignores it */
    json_t *value = json_loadb(json, len, 0, NULL);
    free(json);
    if (!value)
        return CK_ENOMEM; /* we built the JSON: only memory can make it unreadable */
    *ret = ck__json_to_yaml(value, ret_len);
    json_decref(value);
    return *ret ? 0 : CK_ENOMEM;
}

static int decode_yaml(const char *body, size_t len, char **ret_json, size_t *ret_len,
                       struct ck_err *reterr)
{
    json_t *value = NULL;
    struct ck_err err = {0};
    int r = ck__yaml_to_json(body, len, &value, &err);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (r < 0)
        return ck_err_status(reterr, "BadRequest", "error converting YAML to JSON: %s", err.msg);
    *ret_json =
        ck__json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY, ret_len);
    json_decref(value);
    return *ret_json ? 0 : ck_err_no_memory(reterr);
}

static const struct ck__codec codecs[] = {
    {.media_type = "application/json", .streams = true, .encode = encode_json, .decode = NULL},
    {.media_type = "application/yaml",
     .streams = false,
     .encode = encode_yaml,
     .decode = decode_yaml},
};
#define N_CODECS (sizeof(codecs) / sizeof(codecs[0]))

const struct ck__codec *ck__codec_json(void)
{
    return &codecs[0];
}

/* True when the len bytes at item start with the media type mt, whole (then ';', ' ' or end). */
static bool media_is(const char *item, size_t len, const char *mt)
{
    size_t n = strlen(mt);
    return len >= n && strncasecmp(item, mt, n) == 0 &&
           (len == n || item[n] == ';' || item[n] == ' ');
}

/* True when needle occurs in the first len bytes of item. */
static bool media_has(const char *item, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(item + i, needle, n) == 0)
            return true;
    return false;
}

const struct ck__codec *ck__codec_for_content_type(const char *content_type)
{
    if (!content_type || !*content_type)
        return &codecs[0]; /* Kubernetes decodes a body without a type as its first: JSON */
    size_t len = strlen(content_type);
    for (size_t i = 0; i < N_CODECS; i++)
        if (media_is(content_type, len, codecs[i].media_type))
            return &codecs[i];
    if (media_is(content_type, len, "*/*"))
        return &codecs[0];
    return NULL;
}

/* The shape an Accept entry of a codec asks for with its as=/g=/v= parameters. */
static bool entry_shape(const char *item, size_t len, enum ck__accept *ret)
{
    bool meta = media_has(item, len, "g=meta.k8s.io");
    if (!media_has(item, len, "as=")) {
        *ret = CK__ACCEPT_JSON;
        return true;
    }
    if (meta && media_has(item, len, "as=Table")) {
        *ret = CK__ACCEPT_TABLE;
        return true;
    }
    /* the List first: "as=PartialObjectMetadata" is a prefix of it */
    if (meta && media_has(item, len, "as=PartialObjectMetadataList") &&
        media_has(item, len, "v=v1")) {
        *ret = CK__ACCEPT_PARTIAL_LIST;
        return true;
    }
    if (meta && media_has(item, len, "as=PartialObjectMetadata") && media_has(item, len, "v=v1")) {
        *ret = CK__ACCEPT_PARTIAL;
        return true;
    }
    return false;
}

/* Go's isPrettyPrint: ?pretty= when given, else the User-Agent of a browser or a CLI tool. */
static bool wants_pretty(struct ck__req *req)
{
    const char *pretty = ck__query(req, "pretty");
    if (pretty && *pretty) {
        bool v = false;
        return ck__parse_bool(pretty, &v) && v;
    }
    const char *agent = ck__req_header(req, "User-Agent");
    return agent && (strncmp(agent, "curl", 4) == 0 || strncmp(agent, "Wget", 4) == 0 ||
                     strncmp(agent, "Mozilla/", 8) == 0);
}

/*
 * The negotiation; with streaming, rows without stream framing are skipped;
 * protobuf entries count only when protobuf may be chosen.
 */
static void negotiate(const char *accept, bool streaming, bool protobuf, struct ck__media *ret)
{
    *ret = (struct ck__media){.codec = &codecs[0], .shape = CK__ACCEPT_JSON};
    if (!accept || !*accept)
        return;
    /* walk the comma-separated entries in place: nothing to allocate, nothing to fail */
    for (const char *item = accept; *item;) {
        while (*item == ' ')
            item++;
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        if (protobuf && media_is(item, len, CK_PROTOBUF_MEDIA_TYPE) &&
            !media_has(item, len, "as=")) {
            /* JSON stays the codec of whatever a handler does not answer in protobuf */
            *ret = (struct ck__media){.codec = &codecs[0], .shape = CK__ACCEPT_PROTOBUF};
            return;
        }
        const struct ck__codec *codec = NULL;
        for (size_t i = 0; i < N_CODECS && !codec; i++)
            if (media_is(item, len, codecs[i].media_type) && (!streaming || codecs[i].streams))
                codec = &codecs[i];
        if (!codec && (media_is(item, len, "*/*") || media_is(item, len, "application/*")))
            codec = &codecs[0];
        enum ck__accept shape;
        if (codec && entry_shape(item, len, &shape)) {
            ret->codec = codec;
            ret->shape = shape;
            ret->pretty = media_has(item, len, "pretty=1");
            return; /* the first acceptable entry wins */
        }
        if (!comma)
            break;
        item = comma + 1;
    }
    ret->codec = NULL;
    ret->shape = CK__ACCEPT_NONE;
}

void ck__media_negotiate_accept(const char *accept, struct ck__media *ret)
{
    negotiate(accept, false, true, ret);
}

void ck__media_negotiate(struct ck__req *req, struct ck__media *ret)
{
    ck__media_negotiate_accept(ck__req_header(req, "Accept"), ret);
    if (ret->codec && !ret->pretty)
        ret->pretty = wants_pretty(req);
}

enum ck__accept ck__negotiate(struct ck__req *req)
{
    struct ck__media media;
    ck__media_negotiate_accept(ck__req_header(req, "Accept"), &media);
    return media.shape;
}

enum ck__accept ck__negotiate_kind(struct ck__req *req, const struct ck_kind *kind)
{
    struct ck__media media;
    negotiate(ck__req_header(req, "Accept"), false, ck_proto_has_message(kind->schema), &media);
    return media.shape;
}

bool ck__media_can_stream(struct ck__req *req)
{
    struct ck__media media;
    negotiate(ck__req_header(req, "Accept"), true, true, &media);
    return media.codec != NULL;
}

size_t ck__media_types_for(bool streaming, bool protobuf, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i <= N_CODECS; i++) {
        const char *type = i < N_CODECS ? codecs[i].media_type : CK_PROTOBUF_MEDIA_TYPE;
        if ((i < N_CODECS && streaming && !codecs[i].streams) || (i == N_CODECS && !protobuf))
            continue;
        int w = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", type);
        if (w < 0 || (size_t)w >= size - n)
            break;
        n += (size_t)w;
    }
    return n;
}

size_t ck__media_types(bool streaming, char *buf, size_t size)
{
    return ck__media_types_for(streaming, false, buf, size);
}

int ck__media_encode(struct ck__req *req, const char *content_type, char *body, size_t len,
                     char **ret_body, size_t *ret_len, char *ret_type, size_t type_size)
{
    const char *json = codecs[0].media_type;
    size_t json_len = strlen(json);
    if (strncmp(content_type, json, json_len) != 0) { /* not an API object: as it is */
        snprintf(ret_type, type_size, "%s", content_type);
        *ret_body = body;
        *ret_len = len;
        return 0;
    }
    struct ck__media media;
    ck__media_negotiate(req, &media);
    /* a request we cannot answer in its format hears why in JSON */
    const struct ck__codec *codec = media.codec ? media.codec : &codecs[0];
    /* parameters of content_type, if any, stay after the codec's type */
    snprintf(ret_type, type_size, "%s%s", codec->media_type, content_type + json_len);
    return codec->encode(body, len, media.pretty, ret_body, ret_len);
}

bool ck__media_compact_json(struct ck__req *req)
{
    struct ck__media media;
    ck__media_negotiate(req, &media);
    return (!media.codec || media.codec == &codecs[0]) && !media.pretty;
}

static const char *quote_char(unsigned char c, char *buf, size_t size)
{
    if (c == '\'')
        snprintf(buf, size, "'\\''");
    else if (c >= 0x20 && c < 0x7f)
        snprintf(buf, size, "'%c'", c);
    else
        snprintf(buf, size, "'\\x%02x'", c);
    return buf;
}

int ck__media_check_json(const char *kind_name, const char *body, size_t len, struct ck_err *reterr)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
        i++;
    if (i < len && strchr("{[\"-0123456789tfn", body[i]))
        return 0;
    /* what Go's json.Unmarshal says, then apiserver's summary of the body (summarizeData) */
    char why[96], summary[80], c[16];
    if (i == len)
        snprintf(why, sizeof(why), "unexpected end of JSON input");
    else
        snprintf(why, sizeof(why), "invalid character %s looking for beginning of value",
                 quote_char((unsigned char)body[i], c, sizeof(c)));
    if (len == 0) {
        snprintf(summary, sizeof(summary), "<empty>");
    } else {
        size_t n = len > 30 ? 30 : len, w = 0;
        for (size_t k = 0; k < n; k++)
            w += (size_t)snprintf(summary + w, sizeof(summary) - w, "%02x", (unsigned char)body[k]);
        if (len > 30)
            snprintf(summary + w, sizeof(summary) - w, " ...");
    }
    return ck_err_status(reterr, "BadRequest",
                         "the object provided is unrecognized (must be of type %s): couldn't get "
                         "version/kind; json parse error: %s (%s)",
                         kind_name, why, summary);
}

int ck__err_unsupported_media(struct ck_err *reterr)
{
    return ck__err_unsupported_media_for(reterr, false);
}

int ck__err_unsupported_media_for(struct ck_err *reterr, bool protobuf)
{
    char types[256];
    ck__media_types_for(false, protobuf, types, sizeof(types));
    return ck_err_status(
        reterr, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: %s",
        types);
}

int ck__media_decode_body(struct ck__req *req, const struct ck_kind *kind, const char *body,
                          size_t len, char **ret_json, size_t *ret_len, struct ck_err *reterr)
{
    *ret_json = NULL;
    *ret_len = 0;
    const char *type = ck__req_header(req, "Content-Type");
    if (ck__is_proto_media_type(type))
        return 0; /* the handler decodes it, knowing the kind (protobuf.c) */
    const struct ck__codec *codec = ck__codec_for_content_type(type);
    if (!codec)
        return ck__err_unsupported_media_for(reterr, kind && ck_proto_has_message(kind->schema));
    if (!codec->decode || !body)
        return 0;
    return codec->decode(body, len, ret_json, ret_len, reterr);
}
