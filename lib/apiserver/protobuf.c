/*
 * protobuf.c - the API server's side of application/vnd.kubernetes.protobuf.
 *
 * The codec is lib/api/protobuf.c; this file is the small hook between it
 * and the handlers, kept apart so that media-type negotiation can call it
 * from one place:
 *
 * - ck__proto_body_to_json(): a request body sent as protobuf becomes the
 *   JSON text the rest of the write path decodes, as if the client had sent
 *   JSON. A kind without a protobuf message (a custom resource) answers 415,
 *   as Kubernetes does.
 * - ck__send_proto(): a response the handlers built as JSON (served bytes,
 *   a list, a Status) goes out as protobuf, its message found from its
 *   apiVersion and kind.
 *
 * The store keeps JSON, so every protobuf answer is JSON parsed and encoded
 * again (bench/apiserver measures what that costs beside JSON).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/internal/util.h"
#include "internal.h"

bool ck__is_proto_media_type(const char *content_type)
{
    static const char media[] = CK_PROTOBUF_MEDIA_TYPE;
    return content_type && strncasecmp(content_type, media, sizeof(media) - 1) == 0 &&
           (content_type[sizeof(media) - 1] == '\0' || content_type[sizeof(media) - 1] == ';' ||
            content_type[sizeof(media) - 1] == ' ');
}

int ck__proto_body_to_json(const char *schema, const char *body, size_t len, char **ret_json,
                           size_t *ret_len, struct ck_err *reterr)
{
    if (!ck_proto_has_message(schema))
        return ck_err_status(
            reterr, "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json");
    json_t *obj = NULL;
    int r = ck_proto_decode(schema, body ? body : "", len, &obj, reterr);
    if (r < 0)
        return r;
    size_t n = 0;
    char *text = ck__json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER, &n);
    json_decref(obj);
    if (!text)
        return ck_err_no_memory(reterr);
    *ret_json = text;
    *ret_len = n;
    return 0;
}

int ck__json_to_proto(const char *json, size_t len, char **ret_data, size_t *ret_len,
                      struct ck_err *reterr)
{
    json_t *obj = NULL;
    int r = ck_json_loadb(json, len, 0, &obj, NULL);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (r < 0)
        return ck_err_internal(reterr, "a served object is not JSON");
    char message[256];
    r = ck_proto_message_of(obj, message, sizeof(message));
    if (r == 0)
        r = ck_proto_encode(message, obj, ret_data, ret_len, reterr);
    else
        ck_err_status(reterr, "NotAcceptable", "%s has no protobuf form",
                      json_string_value(json_object_get(obj, "kind")));
    json_decref(obj);
    return r;
}

enum MHD_Result ck__send_proto(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                               const struct ck_warnings *warnings)
{
    char *data = NULL;
    size_t n = 0;
    struct ck_err err = {0};
    int r = ck__json_to_proto(body, len, &data, &n, &err);
    free(body);
    if (r < 0)
        return ck__fail(conn, &err);
    return ck__send_bytes(conn, status, CK_PROTOBUF_MEDIA_TYPE, data, n, warnings);
}
