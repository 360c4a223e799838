/*
 * openapi_v2_proto.c - /openapi/v2 in protobuf: the Swagger document as
 * gnostic's openapi_v2.Document message.
 *
 * kube-apiserver (k8s.io/kube-openapi's handler) answers an Accept of
 * application/com.github.proto-openapi.spec.v2[@.]v1.0+protobuf with its
 * Swagger JSON converted by gnostic (github.com/google/gnostic-models
 * openapiv2) and marshalled as protobuf. The messages, field numbers and
 * types are data, lib/api/openapi_v2_proto/fields.json, which
 * scripts/gen-openapi-v2-proto-fields writes from OpenAPIv2.proto (a copy in
 * tests/data/openapiv2/). One encoder walks the Swagger JSON and a message
 * description together, as gnostic's compiler reads the same document:
 * - a field is read from its Swagger key (fields.json `json`);
 * - a repeated Named* field ({1: name, 2: value}) takes the keys of the
 *   object with its prefix (`keys`: "x-" vendor extensions, "/" paths, ""
 *   the keys nothing else claims, as a map message's entries), in the
 *   order of the JSON;
 * - a message with a `oneof` takes the first option whose `when` holds
 *   (has a key, a key equals a string, the value is a boolean), else the
 *   option with no condition;
 * - an `array` message (TypeItem, ItemsItem, StringArray) takes a JSON
 *   array, or one value as a one-element array;
 * - Any is {2: yaml}: the value as YAML, as gnostic keeps extensions,
 *   defaults, examples and enums.
 * Scalars are proto3: a zero value is not written; fields go in number order.
 * Keys gnostic does not know are left out (it would refuse the document).
 *
 * Threading: the table is parsed on first use under a mutex (again after
 * running out of memory) and only read once published.
 * Memory: errors and out of memory are reported, never a partial answer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* Swagger nested deeper than this is refused (Kubernetes' is about 20 deep). */
#define OPENAPI_V2_PROTO_MAX_DEPTH 128

extern const char *const ck__openapi_v2_proto_documents[];
extern const size_t ck__openapi_v2_proto_documents_count;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(json_t *) messages; /* fields.json's "messages" once read; never freed */

/* The message table, read on first use (again after running out of memory); NULL: none. */
static const json_t *message_table(void)
{
    json_t *m = atomic_load_explicit(&messages, memory_order_acquire);
    if (m)
        return m;
    pthread_mutex_lock(&table_lock);
    m = atomic_load_explicit(&messages, memory_order_relaxed);
    json_t *doc = NULL;
    if (!m && ck__openapi_v2_proto_documents_count == 1 &&
        ck_json_loadb(ck__openapi_v2_proto_documents[0], strlen(ck__openapi_v2_proto_documents[0]),
                      0, &doc, NULL) == 0) {
        m = json_object_get(doc, "messages");
        m = json_is_object(m) ? json_incref(m) : NULL;
        atomic_store_explicit(&messages, m, memory_order_release);
    }
    json_decref(doc);
    pthread_mutex_unlock(&table_lock);
    return m;
}

struct encoder {
    struct ck__buf buf;
    struct ck_err *err;
    const json_t *table; /* the messages */
};

static int encode_message(struct encoder *e, const char *type, const json_t *v, int depth);

static int wrong_type(struct encoder *e, const char *message, const char *field)
{
    return ck_err_set(e->err, CK_EINVAL, "openapi v2 protobuf: %s.%s has a value of the wrong type",
                      message, field);
}

static const char *field_str(const json_t *field, const char *key)
{
    return json_string_value(json_object_get(field, key));
}

/* One value of a field (an element, when it is repeated). */
static int encode_value(struct encoder *e, const char *message, const json_t *field,
                        const json_t *v, int depth)
{
    const char *type = field_str(field, "type");
    const char *name = field_str(field, "name");
    uint32_t number = (uint32_t)json_integer_value(json_object_get(field, "number"));
    bool repeated = json_is_true(json_object_get(field, "repeated"));
    if (strcmp(type, "string") == 0) {
        if (!json_is_string(v))
            return wrong_type(e, message, name);
        if (repeated || json_string_length(v) > 0)
            ck__pb_put_bytes(&e->buf, number, json_string_value(v), json_string_length(v));
    } else if (strcmp(type, "bool") == 0) {
        if (!json_is_boolean(v))
            return wrong_type(e, message, name);
        if (json_is_true(v)) {
            ck__pb_put_tag(&e->buf, number, CK__PB_VARINT);
            ck__pb_put_varint(&e->buf, 1);
        }
    } else if (strcmp(type, "int64") == 0) {
        if (!json_is_integer(v))
            return wrong_type(e, message, name);
        if (json_integer_value(v) != 0) {
            ck__pb_put_tag(&e->buf, number, CK__PB_VARINT);
            ck__pb_put_varint(&e->buf, (uint64_t)json_integer_value(v));
        }
    } else if (strcmp(type, "double") == 0) {
        if (!json_is_number(v))
            return wrong_type(e, message, name);
        double d = json_number_value(v);
        if (d != 0) {
            uint64_t bits;
            memcpy(&bits, &d, sizeof(bits));
            ck__pb_put_tag(&e->buf, number, CK__PB_FIXED64);
            ck__pb_put_fixed(&e->buf, bits, 8);
        }
    } else {
        size_t start = ck__pb_begin_len(&e->buf, number);
        int r = encode_message(e, type, v, depth + 1);
        ck__pb_end_len(&e->buf, start);
        return r;
    }
    return 0;
}

/* A field's value, each element of an array when it is repeated. */
static int encode_field(struct encoder *e, const char *message, const json_t *field,
                        const json_t *v, int depth)
{
    if (!json_is_true(json_object_get(field, "repeated")))
        return encode_value(e, message, field, v, depth);
    if (!json_is_array(v))
        return wrong_type(e, message, field_str(field, "name"));
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item)
    {
        int r = encode_value(e, message, field, item, depth);
        if (r < 0)
            return r;
    }
    return 0;
}

/* True when a key of the object is claimed by a Named* field of fields with a longer prefix. */
static bool claimed_elsewhere(const json_t *fields, const char *key, const char *prefix)
{
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f)
    {
        const char *other = field_str(f, "keys");
        if (other && strlen(other) > strlen(prefix) && strncmp(key, other, strlen(other)) == 0)
            return true;
    }
    return false;
}

/* The {1: name, 2: value} entries of the object's keys with the field's prefix. */
static int encode_named(struct encoder *e, const json_t *fields, const json_t *field,
                        const json_t *obj, int depth)
{
    const char *prefix = field_str(field, "keys");
    uint32_t number = (uint32_t)json_integer_value(json_object_get(field, "number"));
    const json_t *entry = json_object_get(e->table, field_str(field, "type"));
    const json_t *value_field = json_array_get(json_object_get(entry, "fields"), 1);
    if (!value_field)
        return ck_err_internal(e->err, "openapi v2 protobuf: no value in %s",
                               field_str(field, "type"));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (strncmp(key, prefix, strlen(prefix)) != 0 || claimed_elsewhere(fields, key, prefix))
            continue;
        size_t start = ck__pb_begin_len(&e->buf, number);
        ck__pb_put_bytes(&e->buf, 1, key, strlen(key));
        int r = encode_field(e, field_str(field, "type"), value_field, v, depth + 1);
        ck__pb_end_len(&e->buf, start);
        if (r < 0)
            return r;
    }
    return 0;
}

/* True when a oneof option's condition holds for v (no condition: always). */
static bool option_holds(const json_t *when, const json_t *v)
{
    const char *has = json_string_value(json_object_get(when, "has"));
    const char *key = json_string_value(json_object_get(when, "key"));
    const char *is = json_string_value(json_object_get(when, "is"));
    if (has)
        return json_object_get(v, has) != NULL;
    if (key) {
        const char *value = json_string_value(json_object_get(v, key));
        const char *equals = json_string_value(json_object_get(when, "equals"));
        return value && equals && strcmp(value, equals) == 0;
    }
    if (is)
        return strcmp(is, "boolean") == 0 && json_is_boolean(v);
    return true;
}

static int encode_oneof(struct encoder *e, const char *type, const json_t *fields, const json_t *v,
                        int depth)
{
    size_t i;
    const json_t *f;
    /* the options with a condition first, then the default */
    for (int pass = 0; pass < 2; pass++)
        json_array_foreach(fields, i, f)
        {
            const json_t *when = json_object_get(f, "when");
            if ((json_object_size(when) > 0) == (pass == 0) && option_holds(when, v))
                return encode_value(e, type, f, v, depth);
        }
    return wrong_type(e, type, "oneof");
}

static int encode_message(struct encoder *e, const char *type, const json_t *v, int depth)
{
    if (depth > OPENAPI_V2_PROTO_MAX_DEPTH)
        return ck_err_set(e->err, CK_EINVAL, "openapi v2 protobuf: nested deeper than %d",
                          OPENAPI_V2_PROTO_MAX_DEPTH);
    const json_t *entry = json_object_get(e->table, type);
    const json_t *fields = json_object_get(entry, "fields");
    if (!json_is_array(fields))
        return ck_err_internal(e->err, "openapi v2 protobuf: no message %s", type);
    if (strcmp(type, "Any") == 0) {
        /* gnostic keeps the value as YAML text in field "yaml" */
        size_t len = 0;
        char *yaml = ck__json_to_yaml(v, &len);
        if (!yaml)
            return ck_err_no_memory(e->err);
        size_t i;
        const json_t *f;
        json_array_foreach(fields, i, f)
        {
            if (strcmp(field_str(f, "name"), "yaml") == 0)
                ck__pb_put_bytes(
                    &e->buf, (uint32_t)json_integer_value(json_object_get(f, "number")), yaml, len);
        }
        free(yaml);
        return 0;
    }
    if (json_is_true(json_object_get(entry, "oneof")))
        return encode_oneof(e, type, fields, v, depth);
    if (json_is_true(json_object_get(entry, "array"))) {
        const json_t *only = json_array_get(fields, 0);
        if (json_is_array(v))
            return encode_field(e, type, only, v, depth);
        return encode_value(e, type, only, v, depth);
    }
    if (!json_is_object(v))
        return wrong_type(e, type, "(object)");
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f)
    {
        int r = 0;
        if (field_str(f, "keys")) {
            r = encode_named(e, fields, f, v, depth);
        } else {
            const json_t *value = json_object_get(v, field_str(f, "json"));
            if (value)
                r = encode_field(e, type, f, value, depth);
        }
        if (r < 0)
            return r;
    }
    return 0;
}

int ck_openapi_v2_proto(const json_t *swagger, char **ret_data, size_t *ret_len,
                        struct ck_err *reterr)
{
    const json_t *table = message_table();
    if (!table)
        return ck_err_no_memory(reterr);
    struct encoder e = {.err = reterr, .table = table};
    int r = encode_message(&e, "Document", swagger, 0);
    if (r == 0 && e.buf.err)
        r = ck_err_no_memory(reterr);
    if (r < 0) {
        ck__buf_release(&e.buf);
        return r;
    }
    size_t len = e.buf.len;
    char *data = ck__buf_take(&e.buf);
    if (!data)
        return ck_err_no_memory(reterr);
    *ret_data = data;
    *ret_len = len;
    return 0;
}
