/*
 * protobuf.c - Kubernetes' protobuf wire format, driven by data.
 *
 * kubectl's typed clients speak `application/vnd.kubernetes.protobuf`: the
 * four bytes "k8s\0", then a runtime.Unknown {1: typeMeta {1: apiVersion,
 * 2: kind}, 2: raw, 3: contentEncoding, 4: contentType} whose raw is the
 * object's message as Kubernetes' generated.proto numbers it (proto2). Watch
 * streams are frames of a 4-byte big-endian length and a bare metav1.WatchEvent
 * {1: type, 2: object (RawExtension {1: raw})} whose raw is the object with
 * magic and envelope (apimachinery runtime/serializer/protobuf and
 * util/framer).
 *
 * Nothing here knows a kind. The messages, their field numbers and types come
 * from lib/api/protobuf/fields.json, which scripts/gen-proto-fields writes
 * from Kubernetes' generated.proto (plus, from the Go sources, whether a
 * field is a pointer, whether JSON inlines it, and which messages are a Go
 * named slice: an array in JSON). A message is named as the
 * OpenAPI schema of the same type (io.k8s.api.core.v1.Pod), so a kind's
 * `schema` names its message. One encoder walks a JSON object (jansson) and
 * the message description together, one decoder walks the bytes and builds
 * the JSON object Kubernetes' JSON encoding of the same Go value would give.
 * The types whose JSON is not an object of their fields are recognised by
 * message name: metav1.Time and MicroTime (RFC 3339 <-> seconds, nanos),
 * resource.Quantity (a string <-> {1: string}), intstr.IntOrString (a
 * number or a string <-> {1: type, 2: intVal, 3: strVal}), runtime.RawExtension
 * and metav1.FieldsV1 (a JSON value <-> its JSON bytes), the named slices
 * (an array <-> {repeated items = 1}), and `bytes` fields (base64 in JSON).
 * Lists and watch frames can also be assembled from objects already encoded
 * (ck_proto_encode_list(), ck_proto_watch_frame()), so a server encodes each
 * object once.
 *
 * Proto2 presence against Go's JSON: the decoder keeps a scalar that is zero
 * only when the Go field is a pointer (`replicas: 0`), since Go writes every
 * non-pointer field and its zero is what JSON omits or the schema's defaults
 * restore; a message present is an object even when empty, as Go marshals a
 * struct, except a zero Time, which Go marshals as null (left out). The
 * encoder writes what the JSON has, fields in number order and map entries
 * sorted by key, as Go's generated marshallers do.
 *
 * The wire layer (varints, tags, length-delimited fields, fixed 32/64) is
 * libckube-util's protowire.c (docs/dependencies.md says why not protobuf-c).
 * The decoder reads untrusted bytes: every length is checked against what is
 * left, nesting is capped at CK__PROTO_MAX_DEPTH, and fuzz/fuzz_protobuf.c
 * runs it under libFuzzer.
 *
 * Threading: the message table is built on first use under a mutex and is
 * read-only once published; the functions share nothing else.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

/* Messages nested deeper than this are refused (a pod is about 10 deep). */
#define CK__PROTO_MAX_DEPTH 64

static const char magic[4] = {'k', '8', 's', '\0'};

enum pb_type {
    PB_STRING,
    PB_BYTES,
    PB_BOOL,
    PB_INT32,
    PB_INT64,
    PB_UINT32,
    PB_UINT64,
    PB_SINT32,
    PB_SINT64,
    PB_FIXED32,
    PB_FIXED64,
    PB_SFIXED32,
    PB_SFIXED64,
    PB_DOUBLE,
    PB_FLOAT,
    PB_MESSAGE,
    PB_MAP,
};

static const struct {
    const char *name;
    enum pb_type type;
} scalar_names[] = {
    {"string", PB_STRING},     {"bytes", PB_BYTES},     {"bool", PB_BOOL},
    {"int32", PB_INT32},       {"int64", PB_INT64},     {"uint32", PB_UINT32},
    {"uint64", PB_UINT64},     {"sint32", PB_SINT32},   {"sint64", PB_SINT64},
    {"fixed32", PB_FIXED32},   {"fixed64", PB_FIXED64}, {"sfixed32", PB_SFIXED32},
    {"sfixed64", PB_SFIXED64}, {"double", PB_DOUBLE},   {"float", PB_FLOAT},
};

/* The messages whose JSON form is not an object of their fields. */
enum pb_special {
    SPECIAL_NONE,
    SPECIAL_TIME,
    SPECIAL_MICRO_TIME,
    SPECIAL_QUANTITY,
    SPECIAL_INT_OR_STRING,
    SPECIAL_RAW_JSON, /* RawExtension, FieldsV1: field 1 holds JSON bytes */
    SPECIAL_ARRAY,    /* a Go named slice (the data's "arrays"): {repeated items = 1} */
    SPECIAL_UNSUPPORTED,
};

static const struct {
    const char *name;
    enum pb_special special;
} special_names[] = {
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Time", SPECIAL_TIME},
    {"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", SPECIAL_MICRO_TIME},
    {"io.k8s.apimachinery.pkg.api.resource.Quantity", SPECIAL_QUANTITY},
    {"io.k8s.apimachinery.pkg.util.intstr.IntOrString", SPECIAL_INT_OR_STRING},
    {"io.k8s.apimachinery.pkg.runtime.RawExtension", SPECIAL_RAW_JSON},
    {"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", SPECIAL_RAW_JSON},
    /* a Go duration string ("1h0m0s"); no kind ckube serves has one */
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Duration", SPECIAL_UNSUPPORTED},
};

struct pb_message;

struct pb_field {
    const char *name; /* the JSON name; borrowed from the data document */
    uint32_t number;
    enum pb_type type;     /* PB_MAP: key_type and value_type say the rest */
    enum pb_type key_type; /* maps */
    enum pb_type value_type;
    const struct pb_message *message; /* PB_MESSAGE, or a map's message value */
    bool repeated;
    bool pointer; /* a Go pointer: a zero value is kept */
    bool inline_; /* JSON has the message's fields in the parent's object */
};

struct pb_message {
    const char *name;
    enum pb_special special;
    struct pb_field *fields; /* by number */
    size_t n_fields;
};

/*
 * The message table, built on first use. `loaded` is set (release) once it
 * is complete and never changes afterwards, so readers only acquire-load it;
 * a build that runs out of memory leaves nothing behind and the next call
 * tries again (a one-time pthread_once would keep the failure forever).
 */
static struct {
    char *names;                 /* every message and field name, one after the other */
    struct pb_message *messages; /* by name */
    size_t n_messages;
    atomic_bool loaded;
} table;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* lib/api/protobuf/fields.json, embedded by the build */
extern const char *const ck__proto_documents[];
extern const size_t ck__proto_documents_count;

static int cmp_message(const void *a, const void *b)
{
    return strcmp(((const struct pb_message *)a)->name, ((const struct pb_message *)b)->name);
}

static int cmp_field(const void *a, const void *b)
{
    uint32_t x = ((const struct pb_field *)a)->number, y = ((const struct pb_field *)b)->number;
    return x < y ? -1 : x > y;
}

static const struct pb_message *find_message(const char *name)
{
    struct pb_message key = {.name = name};
    if (!name || !table.messages)
        return NULL;
    return bsearch(&key, table.messages, table.n_messages, sizeof(key), cmp_message);
}

static bool scalar_type(const char *name, enum pb_type *ret)
{
    for (size_t i = 0; i < CK__COUNT(scalar_names); i++)
        if (strcmp(scalar_names[i].name, name) == 0) {
            *ret = scalar_names[i].type;
            return true;
        }
    return false;
}

/* Resolves a type name to a scalar or a message; false when it is neither. */
static bool resolve_type(const char *name, enum pb_type *ret_type,
                         const struct pb_message **ret_message)
{
    if (!name)
        return false;
    if (scalar_type(name, ret_type))
        return true;
    *ret_type = PB_MESSAGE;
    *ret_message = find_message(name);
    return *ret_message != NULL;
}

static int load_fields(struct pb_message *m, const json_t *fields)
{
    m->n_fields = json_array_size(fields);
    m->fields = ck__calloc(m->n_fields + 1, sizeof(*m->fields));
    if (!m->fields)
        return CK_ENOMEM;
    for (size_t i = 0; i < m->n_fields; i++) {
        const json_t *f = json_array_get(fields, i);
        struct pb_field *pf = &m->fields[i];
        pf->name = json_string_value(json_object_get(f, "name"));
        json_int_t number = json_integer_value(json_object_get(f, "number"));
        const char *type = json_string_value(json_object_get(f, "type"));
        if (!pf->name || number <= 0 || number > 536870911 || !type)
            return CK_EINVAL;
        pf->number = (uint32_t)number;
        pf->repeated = json_is_true(json_object_get(f, "repeated"));
        pf->pointer = json_is_true(json_object_get(f, "pointer"));
        pf->inline_ = json_is_true(json_object_get(f, "inline"));
        if (strcmp(type, "map") == 0) {
            pf->type = PB_MAP;
            const struct pb_message *unused = NULL;
            if (!resolve_type(json_string_value(json_object_get(f, "key")), &pf->key_type,
                              &unused) ||
                pf->key_type != PB_STRING || /* JSON object keys: Kubernetes' maps are all so */
                !resolve_type(json_string_value(json_object_get(f, "value")), &pf->value_type,
                              &pf->message))
                return CK_EINVAL;
        } else if (!resolve_type(type, &pf->type, &pf->message)) {
            return CK_EINVAL;
        }
    }
    qsort(m->fields, m->n_fields, sizeof(*m->fields), cmp_field);
    return 0;
}

/*
 * Copies every name into one block (table.names), so that the parsed
 * document, many times the size of the table, can go. 0 or CK_ENOMEM.
 */
static int own_names(void)
{
    size_t total = 0;
    for (size_t i = 0; i < table.n_messages; i++) {
        total += strlen(table.messages[i].name) + 1;
        for (size_t f = 0; f < table.messages[i].n_fields; f++)
            total += strlen(table.messages[i].fields[f].name) + 1;
    }
    char *p = table.names = ck__malloc(total + 1);
    if (!p)
        return CK_ENOMEM;
    for (size_t i = 0; i < table.n_messages; i++) {
        struct pb_message *m = &table.messages[i];
        size_t n = strlen(m->name) + 1;
        m->name = memcpy(p, m->name, n);
        p += n;
        for (size_t f = 0; f < m->n_fields; f++) {
            n = strlen(m->fields[f].name) + 1;
            m->fields[f].name = memcpy(p, m->fields[f].name, n);
            p += n;
        }
    }
    return 0;
}

/* Builds the table; 0, CK_ENOMEM, or CK_EINVAL for a data file that does not load (a bug). */
static int load_table(void)
{
    json_t *doc = NULL;
    int r =
        ck__proto_documents_count == 1
            ? ck_json_loadb(ck__proto_documents[0], strlen(ck__proto_documents[0]), 0, &doc, NULL)
            : CK_EINVAL;
    const json_t *messages = json_object_get(doc, "messages");
    if (r == 0 && !json_is_object(messages))
        r = CK_EINVAL;
    if (r == 0) {
        table.n_messages = json_object_size(messages);
        table.messages = ck__calloc(table.n_messages + 1, sizeof(*table.messages));
        if (!table.messages)
            r = CK_ENOMEM;
    }
    size_t i = 0;
    const char *name;
    const json_t *fields;
    json_object_foreach((json_t *)messages, name, fields)
    {
        if (r < 0)
            break;
        table.messages[i].name = name;
        for (size_t s = 0; s < CK__COUNT(special_names); s++)
            if (strcmp(special_names[s].name, name) == 0)
                table.messages[i].special = special_names[s].special;
        i++;
    }
    if (r == 0)
        qsort(table.messages, table.n_messages, sizeof(*table.messages), cmp_message);
    const json_t *arrays = json_object_get(doc, "arrays");
    for (i = 0; r == 0 && i < json_array_size(arrays); i++) {
        struct pb_message *m =
            (struct pb_message *)find_message(json_string_value(json_array_get(arrays, i)));
        if (m)
            m->special = SPECIAL_ARRAY;
        else
            r = CK_EINVAL;
    }
    for (i = 0; r == 0 && i < table.n_messages; i++)
        r = load_fields(&table.messages[i], json_object_get(messages, table.messages[i].name));
    if (r == 0)
        r = own_names();
    if (r < 0) {
        for (i = 0; table.messages && i < table.n_messages; i++)
            free(table.messages[i].fields);
        free(table.messages);
        table.messages = NULL;
        table.n_messages = 0;
        json_decref(doc);
        return r;
    }
    json_decref(doc);
    atomic_store_explicit(&table.loaded, true, memory_order_release);
    return 0;
}

/* 0 once the table is there, else why not. */
static int ensure_table(void)
{
    if (atomic_load_explicit(&table.loaded, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&table_lock);
    int r = atomic_load_explicit(&table.loaded, memory_order_relaxed) ? 0 : load_table();
    pthread_mutex_unlock(&table_lock);
    return r;
}

/* The message called name, or NULL (with *reterr set when the table failed to load). */
static const struct pb_message *message_named(const char *name, struct ck_err *reterr)
{
    int r = ensure_table();
    if (r == CK_ENOMEM) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    if (r < 0) {
        ck_err_internal(reterr, "the protobuf field table does not load");
        return NULL;
    }
    const struct pb_message *m = find_message(name);
    if (!m)
        ck_err_status(reterr, "NotAcceptable", "%s has no protobuf message", name ? name : "");
    return m;
}

bool ck_proto_has_message(const char *name)
{
    /* without the table (out of memory) nothing has a message: JSON is answered */
    return ensure_table() == 0 && find_message(name) != NULL;
}

/* ---- JSON -> protobuf --------------------------------------------------- */

struct encoder {
    struct ck__buf buf;
    struct ck_err *err;
    int depth;
};

static int encode_message(struct encoder *e, const struct pb_message *m, const json_t *value);

static int type_error(struct encoder *e, const char *field, const char *want)
{
    return ck_err_status(e->err, "BadRequest", "protobuf: field %s: want %s", field, want);
}

static enum ck__pb_wire wire_of(enum pb_type t)
{
    switch (t) {
    case PB_STRING:
    case PB_BYTES:
    case PB_MESSAGE:
    case PB_MAP:
        return CK__PB_LEN;
    case PB_FIXED64:
    case PB_SFIXED64:
    case PB_DOUBLE:
        return CK__PB_FIXED64;
    case PB_FIXED32:
    case PB_SFIXED32:
    case PB_FLOAT:
        return CK__PB_FIXED32;
    default:
        return CK__PB_VARINT;
    }
}

/*
 * True when text has only what ck_base64_decode() takes (either alphabet, '=',
 * line breaks): its NULL then means it ran out of memory.
 */
static bool is_base64(const char *text)
{
    return strspn(text,
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=\r\n") ==
           strlen(text);
}

/* Writes one value of type t (a message m) as field number. */
static int encode_value(struct encoder *e, const char *name, uint32_t number, enum pb_type t,
                        const struct pb_message *m, const json_t *v)
{
    switch (t) {
    case PB_STRING:
        if (!json_is_string(v))
            return type_error(e, name, "a string");
        ck__pb_put_bytes(&e->buf, number, json_string_value(v), json_string_length(v));
        return 0;
    case PB_BYTES: {
        if (!json_is_string(v))
            return type_error(e, name, "a base64 string");
        size_t len = 0;
        char *data = ck_base64_decode(json_string_value(v), &len);
        if (!data && is_base64(json_string_value(v)))
            return ck_err_no_memory(e->err);
        if (!data)
            return type_error(e, name, "a base64 string");
        ck__pb_put_bytes(&e->buf, number, data, len);
        free(data);
        return 0;
    }
    case PB_BOOL:
        if (!json_is_boolean(v))
            return type_error(e, name, "a boolean");
        ck__pb_put_tag(&e->buf, number, CK__PB_VARINT);
        ck__pb_put_varint(&e->buf, json_is_true(v));
        return 0;
    case PB_DOUBLE:
    case PB_FLOAT:
        if (!json_is_number(v))
            return type_error(e, name, "a number");
        ck__pb_put_tag(&e->buf, number, wire_of(t));
        if (t == PB_DOUBLE) {
            double d = json_number_value(v);
            uint64_t bits;
            memcpy(&bits, &d, sizeof(bits));
            ck__pb_put_fixed(&e->buf, bits, 8);
        } else {
            float f = (float)json_number_value(v);
            uint32_t bits;
            memcpy(&bits, &f, sizeof(bits));
            ck__pb_put_fixed(&e->buf, bits, 4);
        }
        return 0;
    case PB_MESSAGE: {
        size_t start = ck__pb_begin_len(&e->buf, number);
        int r = encode_message(e, m, v);
        ck__pb_end_len(&e->buf, start);
        return r;
    }
    case PB_MAP:
        return type_error(e, name, "no map here"); /* maps are fields, never values */
    default:
        break;
    }
    if (!json_is_integer(v))
        return type_error(e, name, "an integer");
    int64_t i = json_integer_value(v);
    ck__pb_put_tag(&e->buf, number, wire_of(t));
    switch (t) {
    case PB_SINT32:
    case PB_SINT64:
        ck__pb_put_varint(&e->buf, ((uint64_t)i << 1) ^ (uint64_t)(i >> 63));
        break;
    case PB_FIXED32:
    case PB_SFIXED32:
        ck__pb_put_fixed(&e->buf, (uint64_t)i, 4);
        break;
    case PB_FIXED64:
    case PB_SFIXED64:
        ck__pb_put_fixed(&e->buf, (uint64_t)i, 8);
        break;
    default: /* int32 negatives are ten bytes, sign-extended, as proto2 writes them */
        ck__pb_put_varint(&e->buf, (uint64_t)i);
        break;
    }
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int encode_map(struct encoder *e, const struct pb_field *f, const json_t *v)
{
    if (!json_is_object(v))
        return type_error(e, f->name, "an object");
    size_t n = json_object_size(v), i = 0;
    const char **keys = ck__calloc(n + 1, sizeof(*keys));
    if (!keys)
        return ck_err_no_memory(e->err);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value) keys[i++] = key;
    qsort(keys, n, sizeof(*keys), cmp_key); /* Go's marshallers sort map keys */
    int r = 0;
    for (i = 0; r == 0 && i < n; i++) {
        size_t start = ck__pb_begin_len(&e->buf, f->number);
        json_t *k = json_string(keys[i]);
        if (!k) {
            r = ck_err_no_memory(e->err);
            break;
        }
        r = encode_value(e, f->name, 1, PB_STRING, NULL, k); /* keys are strings (load_fields) */
        json_decref(k);
        value = json_object_get(v, keys[i]);
        if (r == 0 && !json_is_null(value))
            r = encode_value(e, f->name, 2, f->value_type, f->message, value);
        ck__pb_end_len(&e->buf, start);
    }
    free(keys);
    return r;
}

static int encode_field(struct encoder *e, const struct pb_field *f, const json_t *obj)
{
    if (f->inline_) {
        size_t start = ck__pb_begin_len(&e->buf, f->number);
        int r = encode_message(e, f->message, obj);
        ck__pb_end_len(&e->buf, start);
        return r;
    }
    const json_t *v = json_object_get(obj, f->name);
    if (!v || json_is_null(v))
        return 0;
    if (f->type == PB_MAP)
        return encode_map(e, f, v);
    if (!f->repeated)
        return encode_value(e, f->name, f->number, f->type, f->message, v);
    if (!json_is_array(v))
        return type_error(e, f->name, "an array");
    for (size_t i = 0; i < json_array_size(v); i++) {
        int r = encode_value(e, f->name, f->number, f->type, f->message, json_array_get(v, i));
        if (r < 0)
            return r;
    }
    return 0;
}

static int encode_special(struct encoder *e, const struct pb_message *m, const json_t *v)
{
    switch (m->special) {
    case SPECIAL_TIME:
    case SPECIAL_MICRO_TIME: {
        int64_t sec = 0;
        long usec = 0;
        if (!json_is_string(v) || ck__time_parse(json_string_value(v), &sec, &usec) < 0)
            return type_error(e, m->name, "an RFC 3339 time");
        if (m->special == SPECIAL_TIME)
            usec = 0; /* metav1.Time is whole seconds on every wire */
        ck__pb_put_tag(&e->buf, 1, CK__PB_VARINT);
        ck__pb_put_varint(&e->buf, (uint64_t)sec);
        ck__pb_put_tag(&e->buf, 2, CK__PB_VARINT);
        ck__pb_put_varint(&e->buf, (uint64_t)(int64_t)(usec * 1000));
        return 0;
    }
    case SPECIAL_QUANTITY: {
        char text[64];
        const char *s = json_string_value(v);
        if (json_is_integer(v)) { /* a Quantity may be written as a JSON number */
            snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            s = text;
        } else if (json_is_real(v)) {
            snprintf(text, sizeof(text), "%.15g", json_real_value(v));
            s = text;
        }
        if (!s)
            return type_error(e, m->name, "a quantity");
        ck__pb_put_bytes(&e->buf, 1, s, strlen(s));
        return 0;
    }
    case SPECIAL_INT_OR_STRING:
        /* Go writes all three fields */
        if (json_is_integer(v)) {
            json_int_t i = json_integer_value(v);
            if (i < INT32_MIN || i > INT32_MAX)
                return type_error(e, m->name, "an int32 or a string");
            ck__pb_put_tag(&e->buf, 1, CK__PB_VARINT);
            ck__pb_put_varint(&e->buf, 0);
            ck__pb_put_tag(&e->buf, 2, CK__PB_VARINT);
            ck__pb_put_varint(&e->buf, (uint64_t)i);
            ck__pb_put_bytes(&e->buf, 3, "", 0);
        } else if (json_is_string(v)) {
            ck__pb_put_tag(&e->buf, 1, CK__PB_VARINT);
            ck__pb_put_varint(&e->buf, 1);
            ck__pb_put_tag(&e->buf, 2, CK__PB_VARINT);
            ck__pb_put_varint(&e->buf, 0);
            ck__pb_put_bytes(&e->buf, 3, json_string_value(v), json_string_length(v));
        } else {
            return type_error(e, m->name, "an integer or a string");
        }
        return 0;
    case SPECIAL_RAW_JSON: {
        size_t len = 0;
        char *text = ck__json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY, &len);
        if (!text)
            return ck_err_no_memory(e->err);
        ck__pb_put_bytes(&e->buf, 1, text, len);
        free(text);
        return 0;
    }
    case SPECIAL_ARRAY:
        if (!json_is_array(v) || m->n_fields != 1)
            return type_error(e, m->name, "an array");
        for (size_t i = 0; i < json_array_size(v); i++) {
            int r = encode_value(e, m->fields[0].name, m->fields[0].number, m->fields[0].type,
                                 m->fields[0].message, json_array_get(v, i));
            if (r < 0)
                return r;
        }
        return 0;
    default:
        return ck_err_status(e->err, "BadRequest", "protobuf: %s is not supported", m->name);
    }
}

static int encode_message(struct encoder *e, const struct pb_message *m, const json_t *v)
{
    if (++e->depth > CK__PROTO_MAX_DEPTH) {
        e->depth--;
        return ck_err_status(e->err, "BadRequest", "protobuf: nested deeper than %d",
                             CK__PROTO_MAX_DEPTH);
    }
    int r = 0;
    if (m->special != SPECIAL_NONE)
        r = encode_special(e, m, v);
    else if (!json_is_object(v))
        r = type_error(e, m->name, "an object");
    for (size_t i = 0; r == 0 && m->special == SPECIAL_NONE && i < m->n_fields; i++)
        r = encode_field(e, &m->fields[i], v);
    e->depth--;
    if (r == 0 && e->buf.err == CK_ENOMEM)
        return ck_err_no_memory(e->err);
    if (r == 0 && e->buf.err)
        return ck_err_status(e->err, "RequestEntityTooLarge", "protobuf: the object is too large");
    return r;
}

/* Splits "apps/v1" or "v1" (typeMeta) from obj; "" when absent. */
static const char *str_or_empty(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* Appends magic + Unknown{typeMeta, raw} for obj to e->buf. */
static int encode_enveloped(struct encoder *e, const struct pb_message *m, const json_t *obj)
{
    ck__buf_add(&e->buf, magic, sizeof(magic));
    size_t start = ck__pb_begin_len(&e->buf, 1);
    const char *api_version = str_or_empty(obj, "apiVersion");
    const char *kind = str_or_empty(obj, "kind");
    ck__pb_put_bytes(&e->buf, 1, api_version, strlen(api_version));
    ck__pb_put_bytes(&e->buf, 2, kind, strlen(kind));
    ck__pb_end_len(&e->buf, start);
    start = ck__pb_begin_len(&e->buf, 2);
    int r = encode_message(e, m, obj);
    ck__pb_end_len(&e->buf, start);
    /* contentEncoding and contentType: Go writes them empty */
    ck__pb_put_bytes(&e->buf, 3, "", 0);
    ck__pb_put_bytes(&e->buf, 4, "", 0);
    return r;
}

static int finish(struct encoder *e, int r, char **ret_data, size_t *ret_len)
{
    if (r == 0 && e->buf.err)
        r = e->buf.err == CK_ENOMEM ? ck_err_no_memory(e->err)
                                    : ck_err_status(e->err, "RequestEntityTooLarge",
                                                    "protobuf: the object is too large");
    if (r < 0) {
        ck__buf_release(&e->buf);
        return r;
    }
    size_t len = e->buf.len;
    char *data = ck__buf_take(&e->buf);
    if (!data)
        return ck_err_no_memory(e->err);
    *ret_data = data;
    *ret_len = len;
    return 0;
}

int ck_proto_encode(const char *message, const json_t *obj, char **ret_data, size_t *ret_len,
                    struct ck_err *reterr)
{
    const struct pb_message *m = message_named(message, reterr);
    if (!m)
        return reterr && reterr->code ? reterr->code : CK_EINVAL;
    struct encoder e = {.err = reterr};
    int r = encode_enveloped(&e, m, obj);
    return finish(&e, r, ret_data, ret_len);
}

/* Writes the frame's 4-byte big-endian length (util/framer) before the rest of e->buf. */
static int frame_length(struct encoder *e)
{
    if (e->buf.err)
        return 0; /* finish() reports it */
    if (e->buf.len - 4 > UINT32_MAX)
        return ck_err_status(e->err, "InternalError", "protobuf: frame too large");
    uint32_t n = (uint32_t)(e->buf.len - 4);
    for (int i = 0; i < 4; i++)
        e->buf.p[i] = (char)(n >> (24 - 8 * i));
    return 0;
}

int ck_proto_encode_watch_event(const char *message, const char *type, const json_t *obj,
                                char **ret_frame, size_t *ret_len, struct ck_err *reterr)
{
    const struct pb_message *m = message_named(message, reterr);
    if (!m)
        return reterr && reterr->code ? reterr->code : CK_EINVAL;
    struct encoder e = {.err = reterr};
    ck__buf_add(&e.buf, "\0\0\0\0", 4); /* the frame's length, filled in below */
    ck__pb_put_bytes(&e.buf, 1, type, strlen(type));
    size_t object = ck__pb_begin_len(&e.buf, 2); /* RawExtension */
    size_t raw = ck__pb_begin_len(&e.buf, 1);
    int r = encode_enveloped(&e, m, obj);
    ck__pb_end_len(&e.buf, raw);
    ck__pb_end_len(&e.buf, object);
    if (r == 0)
        r = frame_length(&e);
    return finish(&e, r, ret_frame, ret_len);
}

int ck_proto_watch_frame(const char *type, const void *object, size_t object_len, char **ret_frame,
                         size_t *ret_len, struct ck_err *reterr)
{
    struct encoder e = {.err = reterr};
    ck__buf_add(&e.buf, "\0\0\0\0", 4);
    ck__pb_put_bytes(&e.buf, 1, type, strlen(type));
    size_t start = ck__pb_begin_len(&e.buf, 2);
    ck__pb_put_bytes(&e.buf, 1, object, object_len);
    ck__pb_end_len(&e.buf, start);
    return finish(&e, frame_length(&e), ret_frame, ret_len);
}

/* ---- protobuf -> JSON --------------------------------------------------- */

struct decoder {
    struct ck_err *err;
    int depth;
};

static int decode_message(struct decoder *d, const struct pb_message *m, struct ck__pb_reader r,
                          json_t *into, json_t **ret_value);

static int malformed(struct decoder *d, const char *where)
{
    return ck_err_status(d->err, "BadRequest", "protobuf: malformed data in %s", where);
}

/* True when the n bytes at p are UTF-8 (no surrogates, no overlong forms). */
static bool is_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t len = c < 0x80             ? 1
                     : (c & 0xe0) == 0xc0 ? 2
                     : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4
                                          : 0;
        if (!len || i + len > n)
            return false;
        uint32_t cp = len == 1 ? c : (uint32_t)(c & (0x7f >> len));
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

/* A field's value of type t read from the wire as a JSON value (new reference in *ret). */
static int decode_scalar(struct decoder *d, const char *name, enum pb_type t, unsigned wt,
                         struct ck__pb_reader *r, json_t **ret)
{
    uint64_t v = 0;
    struct ck__pb_reader s;
    if (t == PB_STRING || t == PB_BYTES) {
        if (wt != CK__PB_LEN || !ck__pb_get_len(r, &s))
            return malformed(d, name);
        size_t n = (size_t)(s.end - s.p);
        if (t == PB_BYTES) {
            char *text = ck_base64_encode(s.p, n);
            *ret = text ? json_string(text) : NULL;
            free(text);
        } else {
            /* Go takes any bytes in a string; JSON needs UTF-8 */
            if (!is_utf8(s.p, n))
                return ck_err_status(d->err, "BadRequest", "protobuf: field %s is not valid UTF-8",
                                     name);
            *ret = json_stringn((const char *)s.p, n);
        }
        return *ret ? 0 : ck_err_no_memory(d->err);
    }
    size_t width = t == PB_DOUBLE || t == PB_FIXED64 || t == PB_SFIXED64  ? 8
                   : t == PB_FLOAT || t == PB_FIXED32 || t == PB_SFIXED32 ? 4
                                                                          : 0;
    if (width ? wt != (width == 8 ? CK__PB_FIXED64 : CK__PB_FIXED32) ||
                    !ck__pb_get_fixed(r, width, &v)
              : wt != CK__PB_VARINT || !ck__pb_get_varint(r, &v))
        return malformed(d, name);
    switch (t) {
    case PB_BOOL:
        *ret = json_boolean(v != 0);
        break;
    case PB_DOUBLE: {
        double x;
        memcpy(&x, &v, sizeof(x));
        *ret = json_real(x);
        break;
    }
    case PB_FLOAT: {
        uint32_t bits = (uint32_t)v;
        float x;
        memcpy(&x, &bits, sizeof(x));
        *ret = json_real((double)x);
        break;
    }
    case PB_INT32:
        *ret = json_integer((int32_t)(uint32_t)v);
        break;
    case PB_UINT32:
    case PB_FIXED32:
        *ret = json_integer((json_int_t)(uint32_t)v);
        break;
    case PB_SFIXED32:
        *ret = json_integer((int32_t)(uint32_t)v);
        break;
    case PB_SINT32:
    case PB_SINT64: {
        int64_t x = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
        *ret = json_integer(t == PB_SINT32 ? (int32_t)x : x);
        break;
    }
    default: /* int64, uint64 (as Go's JSON would overflow it, so does jansson's), fixed64 */
        *ret = json_integer((json_int_t)v);
        break;
    }
    if (*ret && json_is_real(*ret) && !isfinite(json_real_value(*ret))) {
        json_decref(*ret);
        return ck_err_status(d->err, "BadRequest", "protobuf: field %s is not a finite number",
                             name);
    }
    return *ret ? 0 : ck_err_no_memory(d->err);
}

/* True for the value Go's omitempty leaves out: 0, false, "". */
static bool is_zero(const json_t *v)
{
    return (json_is_integer(v) && json_integer_value(v) == 0) || json_is_false(v) ||
           (json_is_real(v) && json_real_value(v) == 0) ||
           (json_is_string(v) && json_string_length(v) == 0);
}

/* Sets or appends v (taken) under name in obj; NULL v (a null Time) is left out. */
static int store(struct decoder *d, json_t *obj, const struct pb_field *f, json_t *v)
{
    if (!v)
        return 0;
    if (f->repeated) {
        json_t *array = json_object_get(obj, f->name);
        if (!json_is_array(array)) {
            array = json_array();
            if (json_object_set_new(obj, f->name, array) < 0) {
                json_decref(v);
                return ck_err_no_memory(d->err);
            }
        }
        return json_array_append_new(array, v) < 0 ? ck_err_no_memory(d->err) : 0;
    }
    if (f->type != PB_MESSAGE && !f->pointer && is_zero(v)) {
        json_decref(v);
        json_object_del(obj, f->name); /* the last value wins, as in proto2 */
        return 0;
    }
    return json_object_set_new(obj, f->name, v) < 0 ? ck_err_no_memory(d->err) : 0;
}

static int decode_map_entry(struct decoder *d, const struct pb_field *f, struct ck__pb_reader s,
                            json_t *obj)
{
    json_t *key = NULL, *value = NULL;
    int r = 0;
    while (r == 0 && s.p < s.end) {
        uint64_t tag;
        if (!ck__pb_get_varint(&s, &tag)) {
            r = malformed(d, f->name);
            break;
        }
        unsigned wt = (unsigned)(tag & 7);
        uint64_t number = tag >> 3;
        json_t *v = NULL;
        if (number == 1) {
            r = decode_scalar(d, f->name, f->key_type, wt, &s, &v);
            json_decref(key);
            key = v;
        } else if (number == 2 && f->value_type == PB_MESSAGE) {
            struct ck__pb_reader sub;
            if (wt != CK__PB_LEN || !ck__pb_get_len(&s, &sub)) {
                r = malformed(d, f->name);
                break;
            }
            json_decref(value);
            value = NULL;
            r = decode_message(d, f->message, sub, NULL, &value);
        } else if (number == 2) {
            r = decode_scalar(d, f->name, f->value_type, wt, &s, &v);
            json_decref(value);
            value = v;
        } else if (!ck__pb_skip(&s, wt)) {
            r = malformed(d, f->name);
        }
    }
    json_t *map = r == 0 ? json_object_get(obj, f->name) : NULL;
    if (r == 0 && !json_is_object(map)) {
        map = json_object();
        if (json_object_set_new(obj, f->name, map) < 0)
            r = ck_err_no_memory(d->err);
    }
    if (r == 0 && !value) { /* an absent value is its type's zero */
        if (f->value_type == PB_STRING || f->value_type == PB_BYTES)
            value = json_string("");
        else if (f->value_type == PB_BOOL)
            value = json_false();
        else if (f->value_type == PB_MESSAGE)
            r = decode_message(d, f->message, (struct ck__pb_reader){NULL, NULL}, NULL, &value);
        else
            value = json_integer(0);
        if (r == 0 && !value && f->value_type != PB_MESSAGE)
            r = ck_err_no_memory(d->err);
    }
    if (r == 0 && !json_is_string(key)) { /* an absent key is "" */
        json_decref(key);
        key = json_string("");
        if (!key)
            r = ck_err_no_memory(d->err);
    }
    if (r == 0 && value) {
        const char *k = json_string_value(key);
        if (json_object_set(map, k ? k : "", value) < 0)
            r = ck_err_no_memory(d->err);
    }
    json_decref(key);
    json_decref(value);
    return r;
}

/* The JSON of a special message from its fields, read into the C values below. */
static int decode_special(struct decoder *d, const struct pb_message *m, struct ck__pb_reader s,
                          json_t **ret_value)
{
    int64_t ints[4] = {0};
    struct ck__pb_reader bytes[4] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    while (s.p < s.end) {
        uint64_t tag, v;
        if (!ck__pb_get_varint(&s, &tag))
            return malformed(d, m->name);
        unsigned wt = (unsigned)(tag & 7);
        uint64_t number = tag >> 3;
        if (number >= 1 && number <= 3 && wt == CK__PB_VARINT) {
            if (!ck__pb_get_varint(&s, &v))
                return malformed(d, m->name);
            ints[number] = (int64_t)v;
        } else if (number >= 1 && number <= 3 && wt == CK__PB_LEN) {
            if (!ck__pb_get_len(&s, &bytes[number]))
                return malformed(d, m->name);
        } else if (!ck__pb_skip(&s, wt)) {
            return malformed(d, m->name);
        }
    }
    char text[CK__TIME_LEN];
    switch (m->special) {
    case SPECIAL_TIME:
    case SPECIAL_MICRO_TIME: {
        int64_t nanos = (int32_t)ints[2];
        if (ints[1] == 0 && nanos == 0) {
            *ret_value = NULL; /* a zero time marshals as null */
            return 0;
        }
        /* seconds within years 0000-9999, as Go's RFC 3339 marshalling requires */
        if (ints[1] < -62135596800LL || ints[1] > 253402300799LL || nanos < 0 || nanos > 999999999)
            return ck_err_status(d->err, "BadRequest", "protobuf: %s out of range", m->name);
        ck__time_format(ints[1], m->special == SPECIAL_MICRO_TIME ? (long)(nanos / 1000) : -1, text,
                        sizeof(text));
        *ret_value = json_string(text);
        break;
    }
    case SPECIAL_QUANTITY:
        if (!bytes[1].p || bytes[1].p == bytes[1].end)
            *ret_value = json_string("0"); /* the zero Quantity */
        else
            *ret_value =
                json_stringn((const char *)bytes[1].p, (size_t)(bytes[1].end - bytes[1].p));
        if (!*ret_value && bytes[1].p)
            return ck_err_status(d->err, "BadRequest", "protobuf: bad quantity");
        break;
    case SPECIAL_INT_OR_STRING:
        if (ints[1] == 1)
            *ret_value = bytes[3].p ? json_stringn((const char *)bytes[3].p,
                                                   (size_t)(bytes[3].end - bytes[3].p))
                                    : json_string("");
        else
            *ret_value = json_integer((int32_t)ints[2]);
        if (!*ret_value && bytes[3].p)
            return ck_err_status(d->err, "BadRequest", "protobuf: bad IntOrString");
        break;
    case SPECIAL_RAW_JSON: {
        size_t n = bytes[1].p ? (size_t)(bytes[1].end - bytes[1].p) : 0;
        if (n == 0) {
            *ret_value = NULL;
            return 0;
        }
        json_t *v = NULL;
        int r = ck_json_loadb((const char *)bytes[1].p, n, JSON_DECODE_ANY, &v, NULL);
        if (r == CK_ENOMEM)
            return ck_err_no_memory(d->err);
        if (r < 0)
            return ck_err_status(d->err, "BadRequest", "protobuf: %s does not hold JSON", m->name);
        *ret_value = v;
        return 0;
    }
    default:
        return ck_err_status(d->err, "BadRequest", "protobuf: %s is not supported", m->name);
    }
    return *ret_value ? 0 : ck_err_no_memory(d->err);
}

/* Decodes the fields of message m from r into obj (a plain message's JSON object). */
static int decode_fields(struct decoder *d, const struct pb_message *m, struct ck__pb_reader r,
                         json_t *obj)
{
    int ret = 0;
    while (ret == 0 && r.p < r.end) {
        uint64_t tag;
        if (!ck__pb_get_varint(&r, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
            return malformed(d, m->name);
        unsigned wt = (unsigned)(tag & 7);
        struct pb_field key = {.number = (uint32_t)(tag >> 3)};
        const struct pb_field *f = bsearch(&key, m->fields, m->n_fields, sizeof(key), cmp_field);
        if (!f) {
            if (!ck__pb_skip(&r, wt)) /* an unknown field, as Go's unmarshallers skip it */
                ret = malformed(d, m->name);
            continue;
        }
        struct ck__pb_reader sub;
        if (f->type == PB_MESSAGE || f->type == PB_MAP) {
            if (wt != CK__PB_LEN || !ck__pb_get_len(&r, &sub))
                return malformed(d, f->name);
            if (f->type == PB_MAP) {
                ret = decode_map_entry(d, f, sub, obj);
            } else if (f->inline_) {
                ret = decode_message(d, f->message, sub, obj, NULL);
            } else if (!f->repeated && f->message->special == SPECIAL_NONE &&
                       json_is_object(json_object_get(obj, f->name))) {
                /* a message field seen twice merges, as proto2 does */
                ret = decode_message(d, f->message, sub, json_object_get(obj, f->name), NULL);
            } else {
                json_t *v = NULL;
                ret = decode_message(d, f->message, sub, NULL, &v);
                if (ret == 0)
                    ret = store(d, obj, f, v);
                else
                    json_decref(v);
            }
            continue;
        }
        if (f->repeated && wt == CK__PB_LEN && f->type != PB_STRING && f->type != PB_BYTES) {
            /* packed numbers: accepted as every proto2 parser does */
            if (!ck__pb_get_len(&r, &sub))
                return malformed(d, f->name);
            unsigned elem_wt = wire_of(f->type);
            while (ret == 0 && sub.p < sub.end) {
                json_t *v = NULL;
                ret = decode_scalar(d, f->name, f->type, elem_wt, &sub, &v);
                if (ret == 0)
                    ret = store(d, obj, f, v);
            }
            continue;
        }
        json_t *v = NULL;
        ret = decode_scalar(d, f->name, f->type, wt, &r, &v);
        if (ret == 0)
            ret = store(d, obj, f, v);
    }
    return ret;
}

/*
 * Decodes message m from r into `into` (an inline field's parent), or into a
 * new value in *ret_value (an object; a special message's own JSON, NULL for a
 * null one; an array for a named slice).
 */
static int decode_message(struct decoder *d, const struct pb_message *m, struct ck__pb_reader r,
                          json_t *into, json_t **ret_value)
{
    if (++d->depth > CK__PROTO_MAX_DEPTH) {
        d->depth--;
        return ck_err_status(d->err, "BadRequest", "protobuf: nested deeper than %d",
                             CK__PROTO_MAX_DEPTH);
    }
    int ret;
    if (m->special == SPECIAL_ARRAY) {
        /* decoded as the message it is on the wire; its items are the value */
        json_t *wrapper = json_object();
        ret = wrapper ? decode_fields(d, m, r, wrapper) : ck_err_no_memory(d->err);
        json_t *items = json_object_get(wrapper, m->fields[0].name);
        if (ret == 0 && !(*ret_value = items ? json_incref(items) : json_array()))
            ret = ck_err_no_memory(d->err);
        json_decref(wrapper);
    } else if (m->special != SPECIAL_NONE) {
        ret = decode_special(d, m, r, ret_value);
    } else if (into) {
        ret = decode_fields(d, m, r, into);
    } else {
        json_t *obj = json_object();
        ret = obj ? decode_fields(d, m, r, obj) : ck_err_no_memory(d->err);
        if (ret == 0)
            *ret_value = obj;
        else
            json_decref(obj);
    }
    d->depth--;
    return ret;
}

/*
 * Reads magic + Unknown: sets *ret_raw to the object's bytes and fills
 * api_version and kind (cut to size). CK_EINVAL with *reterr on bad data.
 */
static int read_envelope(struct decoder *d, const void *data, size_t len,
                         struct ck__pb_reader *ret_raw, char *api_version, char *kind, size_t size)
{
    if (len < sizeof(magic) || memcmp(data, magic, sizeof(magic)) != 0)
        return ck_err_status(
            d->err, "BadRequest",
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]");
    struct ck__pb_reader r = {(const unsigned char *)data + sizeof(magic),
                              (const unsigned char *)data + len};
    *ret_raw = (struct ck__pb_reader){r.end, r.end};
    api_version[0] = kind[0] = '\0';
    while (r.p < r.end) {
        uint64_t tag;
        struct ck__pb_reader s;
        if (!ck__pb_get_varint(&r, &tag))
            return malformed(d, "runtime.Unknown");
        unsigned wt = (unsigned)(tag & 7);
        if ((tag >> 3) == 1 && wt == CK__PB_LEN) {
            if (!ck__pb_get_len(&r, &s))
                return malformed(d, "runtime.Unknown");
            while (s.p < s.end) {
                struct ck__pb_reader str;
                uint64_t t2;
                if (!ck__pb_get_varint(&s, &t2))
                    return malformed(d, "runtime.TypeMeta");
                if (((t2 >> 3) == 1 || (t2 >> 3) == 2) && (t2 & 7) == CK__PB_LEN) {
                    if (!ck__pb_get_len(&s, &str))
                        return malformed(d, "runtime.TypeMeta");
                    char *out = (t2 >> 3) == 1 ? api_version : kind;
                    size_t n = (size_t)(str.end - str.p);
                    if (n >= size || memchr(str.p, 0, n))
                        return malformed(d, "runtime.TypeMeta");
                    memcpy(out, str.p, n);
                    out[n] = '\0';
                } else if (!ck__pb_skip(&s, (unsigned)(t2 & 7))) {
                    return malformed(d, "runtime.TypeMeta");
                }
            }
        } else if ((tag >> 3) == 2 && wt == CK__PB_LEN) {
            if (!ck__pb_get_len(&r, ret_raw))
                return malformed(d, "runtime.Unknown");
        } else if ((tag >> 3) == 3 && wt == CK__PB_LEN) {
            if (!ck__pb_get_len(&r, &s))
                return malformed(d, "runtime.Unknown");
            if (s.p != s.end) /* Kubernetes writes none and decodes none */
                return ck_err_status(d->err, "BadRequest",
                                     "protobuf: contentEncoding %.*s is not supported",
                                     (int)(s.end - s.p > 32 ? 32 : s.end - s.p), s.p);
        } else if (!ck__pb_skip(&r, wt)) {
            return malformed(d, "runtime.Unknown");
        }
    }
    return 0;
}

static int set_type_meta(struct decoder *d, json_t *obj, const char *api_version, const char *kind)
{
    /* apiVersion and kind first, as JSON objects carry them */
    json_t *typed = json_object();
    if (!typed ||
        (*api_version && json_object_set_new(typed, "apiVersion", json_string(api_version)) < 0) ||
        (*kind && json_object_set_new(typed, "kind", json_string(kind)) < 0) ||
        json_object_update(typed, obj) < 0) {
        json_decref(typed);
        return ck_err_no_memory(d->err);
    }
    json_object_clear(obj);
    int r = json_object_update(obj, typed);
    json_decref(typed);
    return r < 0 ? ck_err_no_memory(d->err) : 0;
}

int ck_proto_decode(const char *message, const void *data, size_t len, json_t **ret_obj,
                    struct ck_err *reterr)
{
    const struct pb_message *m = message_named(message, reterr);
    if (!m)
        return reterr && reterr->code ? reterr->code : CK_EINVAL;
    struct decoder d = {.err = reterr};
    struct ck__pb_reader raw;
    char api_version[256], kind[256];
    int r = read_envelope(&d, data, len, &raw, api_version, kind, sizeof(kind));
    json_t *obj = NULL;
    if (r == 0)
        r = decode_message(&d, m, raw, NULL, &obj);
    if (r == 0 && !json_is_object(obj))
        r = ck_err_status(reterr, "BadRequest", "protobuf: %s is not an object", m->name);
    if (r == 0)
        r = set_type_meta(&d, obj, api_version, kind);
    if (r < 0) {
        json_decref(obj);
        return r;
    }
    *ret_obj = obj;
    return 0;
}

int ck_proto_decode_watch_event(const char *message, const void *data, size_t len,
                                json_t **ret_event, struct ck_err *reterr)
{
    const struct pb_message *m = message_named(message, reterr);
    if (!m)
        return reterr && reterr->code ? reterr->code : CK_EINVAL;
    struct decoder d = {.err = reterr};
    struct ck__pb_reader r = {data, (const unsigned char *)data + len}, type = {NULL, NULL},
                         object = {NULL, NULL};
    while (r.p < r.end) {
        uint64_t tag;
        struct ck__pb_reader s;
        if (!ck__pb_get_varint(&r, &tag))
            return malformed(&d, "WatchEvent");
        unsigned wt = (unsigned)(tag & 7);
        if ((tag >> 3) == 1 && wt == CK__PB_LEN) {
            if (!ck__pb_get_len(&r, &type))
                return malformed(&d, "WatchEvent");
        } else if ((tag >> 3) == 2 && wt == CK__PB_LEN) {
            if (!ck__pb_get_len(&r, &s))
                return malformed(&d, "WatchEvent");
            while (s.p < s.end) { /* RawExtension {1: raw} */
                uint64_t t2;
                if (!ck__pb_get_varint(&s, &t2))
                    return malformed(&d, "RawExtension");
                if ((t2 >> 3) == 1 && (t2 & 7) == CK__PB_LEN) {
                    if (!ck__pb_get_len(&s, &object))
                        return malformed(&d, "RawExtension");
                } else if (!ck__pb_skip(&s, (unsigned)(t2 & 7))) {
                    return malformed(&d, "RawExtension");
                }
            }
        } else if (!ck__pb_skip(&r, wt)) {
            return malformed(&d, "WatchEvent");
        }
    }
    json_t *obj = NULL;
    int ret = ck_proto_decode(message, object.p ? (const void *)object.p : "",
                              object.p ? (size_t)(object.end - object.p) : 0, &obj, reterr);
    if (ret < 0)
        return ret;
    json_t *type_text =
        type.p ? json_stringn((const char *)type.p, (size_t)(type.end - type.p)) : json_string("");
    if (!type_text) {
        json_decref(obj);
        return type.p ? malformed(&d, "WatchEvent") : ck_err_no_memory(reterr);
    }
    json_t *event = json_pack("{s:o, s:o}", "type", type_text, "object", obj);
    if (!event)
        return ck_err_no_memory(reterr);
    *ret_event = event;
    return 0;
}

int ck_proto_message_name(const char *group, const char *version, const char *kind, char *buf,
                          size_t size)
{
    int n;
    if (strcmp(group, "meta.k8s.io") == 0)
        n = snprintf(buf, size, "io.k8s.apimachinery.pkg.apis.meta.%s.%s", version, kind);
    else if (!*group)
        n = snprintf(buf, size, "io.k8s.api.core.%s.%s", version, kind);
    else /* Kubernetes' packages are named by the group's first label: rbac.authorization.k8s.io */
        n = snprintf(buf, size, "io.k8s.api.%.*s.%s.%s", (int)strcspn(group, "."), group, version,
                     kind);
    return n < 0 || (size_t)n >= size ? CK_EINVAL : 0;
}

int ck_proto_message_of(const json_t *obj, char *buf, size_t size)
{
    const char *api_version = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (!api_version || !kind || !*kind)
        return CK_EINVAL;
    char group[256] = "";
    const char *version = api_version;
    const char *slash = strchr(api_version, '/');
    if (slash) {
        if ((size_t)(slash - api_version) >= sizeof(group))
            return CK_EINVAL;
        memcpy(group, api_version, (size_t)(slash - api_version));
        group[slash - api_version] = '\0';
        version = slash + 1;
    }
    if (ck_proto_message_name(group, version, kind, buf, size) == 0 && ck_proto_has_message(buf))
        return 0;
    /* a Status (or WatchEvent) answers for every group: metav1's */
    if (ck_proto_message_name("meta.k8s.io", "v1", kind, buf, size) == 0 &&
        ck_proto_has_message(buf))
        return 0;
    return CK_ENOENT;
}

int ck_proto_unwrap(const void *data, size_t len, const void **ret_raw, size_t *ret_raw_len,
                    struct ck_err *reterr)
{
    struct decoder d = {.err = reterr};
    struct ck__pb_reader raw;
    char api_version[256], kind[256];
    int r = read_envelope(&d, data, len, &raw, api_version, kind, sizeof(kind));
    if (r < 0)
        return r;
    *ret_raw = raw.p;
    *ret_raw_len = (size_t)(raw.end - raw.p);
    return 0;
}

/* The field of m called name, or NULL. */
static const struct pb_field *field_named(const struct pb_message *m, const char *name)
{
    for (size_t i = 0; i < m->n_fields; i++)
        if (strcmp(m->fields[i].name, name) == 0)
            return &m->fields[i];
    return NULL;
}

int ck_proto_encode_list(const char *list_message, const char *api_version, const char *kind,
                         const json_t *meta, const char *const *items, const size_t *item_lens,
                         size_t n, char **ret_data, size_t *ret_len, struct ck_err *reterr)
{
    const struct pb_message *m = message_named(list_message, reterr);
    if (!m)
        return reterr && reterr->code ? reterr->code : CK_EINVAL;
    const struct pb_field *meta_field = field_named(m, "metadata");
    const struct pb_field *items_field = field_named(m, "items");
    if (!meta_field || meta_field->type != PB_MESSAGE || !items_field || !items_field->repeated ||
        items_field->type != PB_MESSAGE)
        return ck_err_status(reterr, "NotAcceptable", "%s is not a list", list_message);
    struct encoder e = {.err = reterr};
    ck__buf_add(&e.buf, magic, sizeof(magic));
    size_t start = ck__pb_begin_len(&e.buf, 1);
    ck__pb_put_bytes(&e.buf, 1, api_version, strlen(api_version));
    ck__pb_put_bytes(&e.buf, 2, kind, strlen(kind));
    ck__pb_end_len(&e.buf, start);
    start = ck__pb_begin_len(&e.buf, 2);
    int r = meta ? encode_value(&e, meta_field->name, meta_field->number, PB_MESSAGE,
                                meta_field->message, meta)
                 : 0;
    for (size_t i = 0; r == 0 && i < n; i++) {
        const void *raw = NULL;
        size_t raw_len = 0;
        r = ck_proto_unwrap(items[i], item_lens[i], &raw, &raw_len, reterr);
        if (r == 0)
            ck__pb_put_bytes(&e.buf, items_field->number, raw, raw_len);
    }
    ck__pb_end_len(&e.buf, start);
    ck__pb_put_bytes(&e.buf, 3, "", 0);
    ck__pb_put_bytes(&e.buf, 4, "", 0);
    return finish(&e, r, ret_data, ret_len);
}
