/*
 * yaml.c - YAML to jansson and back, both through libyaml.
 *
 * Reading: libyaml loads the first document into its node graph, which is
 * walked into a jansson tree: mappings become objects, sequences arrays,
 * plain scalars true/false/null and numbers become booleans, null and
 * numbers, every other scalar a string. JSON is YAML, so a JSON text reads
 * the same. Kubeconfig files and request bodies sent as application/yaml
 * take this road.
 *
 * Writing mirrors what kube-apiserver answers for Accept: application/yaml,
 * which is sigs.k8s.io/yaml's JSONToYAML: the JSON is read into Go maps and
 * written by go-yaml v2, a port of libyaml's emitter. So here libyaml's own
 * emitter is fed events with the same choices go-yaml makes: block style,
 * mapping keys sorted as go-yaml sorts them (runs of digits compare as
 * numbers, a non-letter sorts before a letter), strings plain unless a YAML
 * 1.1 reader would take them for something else (a boolean such as "on", a
 * number, null, a timestamp), then double-quoted; strings with a line break
 * as literal blocks; numbers as Go formats them; no document markers.
 *
 * Limits: 64 levels of nesting both ways (deeper input is refused).
 *
 * Threading: pure functions over their arguments.
 *
 * Tested in tests/util/test_yaml.c.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

#define MAX_DEPTH 64

/* ---- YAML to JSON --------------------------------------------------------- */

/* A plain scalar YAML 1.2's core schema reads as a boolean, null or number. */
static json_t *plain_scalar(const char *s, size_t len)
{
    if ((len == 4 && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))))
        return json_true();
    if ((len == 5 && (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))))
        return json_false();
    if (len == 0 || (len == 1 && s[0] == '~') || (len == 4 && !strcmp(s, "null")))
        return json_null();
    json_t *num = json_loadb(s, len, JSON_DECODE_ANY, NULL);
    if (json_is_number(num))
        return num;
    json_decref(num);
    return json_stringn(s, len);
}

static json_t *node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth)
{
    if (!node || depth > MAX_DEPTH)
        return NULL;
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)node->data.scalar.value;
        size_t len = node->data.scalar.length;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            return plain_scalar(s, len);
        return json_stringn(s, len);
    }
    case YAML_SEQUENCE_NODE: {
        json_t *arr = json_array();
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             arr && it < node->data.sequence.items.top; it++) {
            json_t *v = node_to_json(doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!v || json_array_append_new(arr, v) < 0) {
                json_decref(arr);
                return NULL;
            }
        }
        return arr;
    }
    case YAML_MAPPING_NODE: {
        json_t *obj = json_object();
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
             obj && p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                json_decref(obj);
                return NULL;
            }
            json_t *v = node_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1);
            char *key = v ? ck__malloc(k->data.scalar.length + 1) : NULL;
            if (key) {
                memcpy(key, k->data.scalar.value, k->data.scalar.length);
                key[k->data.scalar.length] = '\0';
            }
            if (!key || json_object_set_new(obj, key, v) < 0) {
                free(key);
                json_decref(v);
                json_decref(obj);
                return NULL;
            }
            free(key);
        }
        return obj;
    }
    default:
        return NULL;
    }
}

int ck__yaml_to_json(const char *text, size_t len, json_t **ret_json, struct ck_err *reterr)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int r = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        r = ck_err_set(reterr, CK_EINVAL, "YAML line %zu: %s", parser.problem_mark.line + 1,
                       parser.problem ? parser.problem : "cannot parse");
        yaml_parser_delete(&parser);
        return r;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    json_t *json = root ? node_to_json(&doc, root, 0) : NULL;
    if (!json)
        r = ck_err_set(reterr, CK_EINVAL, "YAML: empty document, non-scalar key or too deep");
    else
        *ret_json = json;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return r;
}

/* ---- JSON to YAML --------------------------------------------------------- */

/* The strings a YAML 1.1 reader takes for a boolean, null, infinity or NaN. */
static const char *const special_words[] = {
    "",      "~",     "null",  "Null",  "NULL",  "y",     "Y",    "yes",  "Yes",   "YES",
    "n",     "N",     "no",    "No",    "NO",    "true",  "True", "TRUE", "false", "False",
    "FALSE", "on",    "On",    "ON",    "off",   "Off",   "OFF",  ".inf", ".Inf",  ".INF",
    "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",  "<<",
};

/* True when every byte of s is in set (and s is not empty). */
static bool all_in(const char *s, const char *set)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

/* True when s reads as an integer or float in YAML 1.1 (underscores allowed). */
static bool looks_numeric(const char *s)
{
    char clean[128];
    size_t n = 0;
    for (const char *c = s; *c; c++) {
        if (*c == '_')
            continue;
        if (n + 1 >= sizeof(clean))
            return false;
        clean[n++] = *c;
    }
    clean[n] = '\0';
    const char *p = clean;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return false;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return all_in(p + 2, "0123456789abcdefABCDEF");
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        return all_in(p + 2, "01");
    if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        return all_in(p + 2, "01234567");
    /* Go's ParseFloat: digits with an optional fraction and exponent */
    bool digits = false;
    while (isdigit((unsigned char)*p))
        p++, digits = true;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            digits = true;
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

/* True for YAML 1.1 base-60 numbers ("1:20", "-3:25:45.5"), which go-yaml quotes. */
static bool looks_base60(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p) || !strchr(p, ':'))
        return false;
    while (isdigit((unsigned char)*p) || *p == '_')
        p++;
    bool groups = false;
    while (*p == ':') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        p++;
        if (isdigit((unsigned char)*p))
            p++;
        groups = true;
    }
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p) || *p == '_'; p++)
            ;
    return groups && *p == '\0';
}

/* True for a YAML timestamp (2006-1-2, or with a time: 2006-01-02T15:04:05Z and kin). */
static bool looks_timestamp(const char *s)
{
    int y, mo, d, n = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n < 8 || !isdigit((unsigned char)s[0]))
        return false;
    if (!isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]) ||
        !isdigit((unsigned char)s[3]) || s[4] != '-')
        return false;
    const char *rest = s + n;
    if (*rest == '\0')
        return true;
    if (*rest != 'T' && *rest != 't' && *rest != ' ' && *rest != '\t')
        return false;
    int h, mi, sec;
    /* what follows the time (fraction, zone) is what go-yaml's formats accept; any is taken */
    return sscanf(rest + 1, "%2d:%2d:%2d", &h, &mi, &sec) == 3;
}

/* True when go-yaml would write s unquoted: it reads back as the same string. */
static bool plain_is_string(const char *s)
{
    for (size_t i = 0; i < sizeof(special_words) / sizeof(special_words[0]); i++)
        if (strcmp(s, special_words[i]) == 0)
            return false;
    char c = s[0];
    if (isdigit((unsigned char)c) || c == '+' || c == '-' || c == '.')
        return !looks_numeric(s) && !looks_base60(s) && !looks_timestamp(s);
    return true;
}

/* A byte of a key that is not an ASCII letter counts as a letter when it is UTF-8. */
static bool key_letter(unsigned char c)
{
    return isalpha(c) || c >= 0x80;
}

/* go-yaml's key order: numbers inside keys compare by value, a non-letter before a letter. */
static int key_compare(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    for (size_t i = 0; i < la && i < lb; i++) {
        unsigned char ca = (unsigned char)a[i], cb = (unsigned char)b[i];
        if (ca == cb)
            continue;
        bool al = key_letter(ca), bl = key_letter(cb);
        if (al && bl)
            return ca < cb ? -1 : 1;
        if (al || bl)
            return bl ? -1 : 1;
        /* Go's int64 arithmetic: a run of digits too long wraps around, as there */
        unsigned long long an = 0, bn = 0;
        size_t ai = i, bi = i;
        if (ca == '0' || cb == '0') {
            for (size_t j = i; j-- > 0 && isdigit((unsigned char)a[j]);)
                if (a[j] != '0') {
                    an = bn = 1;
                    break;
                }
        }
        for (; ai < la && isdigit((unsigned char)a[ai]); ai++)
            an = an * 10 + (unsigned)(a[ai] - '0');
        for (; bi < lb && isdigit((unsigned char)b[bi]); bi++)
            bn = bn * 10 + (unsigned)(b[bi] - '0');
        if (an != bn)
            return (long long)an < (long long)bn ? -1 : 1;
        if (ai != bi)
            return ai < bi ? -1 : 1;
        return ca < cb ? -1 : 1;
    }
    return la < lb ? -1 : la > lb ? 1 : 0;
}

static int compare_keys(const void *x, const void *y)
{
    return key_compare(*(const char *const *)x, *(const char *const *)y);
}

static int emit_scalar(yaml_emitter_t *em, const char *value, size_t len, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)value, (int)len, 1, 1, style))
        return -1;
    return yaml_emitter_emit(em, &ev) ? 0 : -1;
}

static int emit_string(yaml_emitter_t *em, const char *s, size_t len)
{
    yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
    if (memchr(s, '\n', len))
        style = YAML_LITERAL_SCALAR_STYLE;
    else if (strlen(s) != len || !plain_is_string(s))
        style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    return emit_scalar(em, s, len, style);
}

/* A float as Go's strconv.FormatFloat(f, 'g', -1, 64): the shortest text that reads back. */
static void format_float(double f, char *buf, size_t size)
{
    if (isinf(f)) {
        snprintf(buf, size, f > 0 ? ".inf" : "-.inf");
        return;
    }
    if (isnan(f)) {
        snprintf(buf, size, ".nan");
        return;
    }
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, size, "%.*g", precision, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    /* Go writes exponents with at least two digits, as C does: e+06, e-07 */
}

static int emit_value(yaml_emitter_t *em, const json_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return -1;
    yaml_event_t ev;
    char num[64];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        const char **keys = n ? ck__calloc(n, sizeof(*keys)) : NULL;
        if (n && !keys)
            return -1;
        const char *key;
        json_t *child;
        json_object_foreach((json_t *)v, key, child) keys[i++] = key;
        if (n)
            qsort(keys, n, sizeof(*keys), compare_keys);
        int r = yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) &&
                        yaml_emitter_emit(em, &ev)
                    ? 0
                    : -1;
        for (i = 0; r == 0 && i < n; i++) {
            r = emit_string(em, keys[i], strlen(keys[i]));
            if (r == 0)
                r = emit_value(em, json_object_get(v, keys[i]), depth + 1);
        }
        free(keys);
        if (r == 0 && !(yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev)))
            r = -1;
        return r;
    }
    case JSON_ARRAY: {
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return -1;
        for (size_t i = 0; i < json_array_size(v); i++)
            if (emit_value(em, json_array_get(v, i), depth + 1) < 0)
                return -1;
        return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev) ? 0 : -1;
    }
    case JSON_STRING:
        return emit_string(em, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return emit_scalar(em, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
    case JSON_REAL:
        format_float(json_real_value(v), num, sizeof(num));
        return emit_scalar(em, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
    case JSON_TRUE:
        return emit_scalar(em, "true", 4, YAML_PLAIN_SCALAR_STYLE);
    case JSON_FALSE:
        return emit_scalar(em, "false", 5, YAML_PLAIN_SCALAR_STYLE);
    case JSON_NULL:
    default:
        return emit_scalar(em, "null", 4, YAML_PLAIN_SCALAR_STYLE);
    }
}

/* libyaml's write handler: appends to a struct ck__buf. */
static int write_to_buf(void *data, unsigned char *buffer, size_t size)
{
    return ck__buf_add(data, buffer, size) == 0;
}

char *ck__json_to_yaml(const json_t *json, size_t *ret_len)
{
    if (!json)
        return NULL;
    yaml_emitter_t em;
    if (!yaml_emitter_initialize(&em))
        return NULL;
    struct ck__buf out = {0};
    yaml_emitter_set_output(&em, write_to_buf, &out);
    yaml_emitter_set_unicode(&em, 1);
    yaml_event_t ev;
    int r = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
                    yaml_emitter_emit(&em, &ev) &&
                    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
                    yaml_emitter_emit(&em, &ev)
                ? 0
                : -1;
    if (r == 0)
        r = emit_value(&em, json, 0);
    if (r == 0 && !(yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
                    yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev) &&
                    yaml_emitter_flush(&em)))
        r = -1;
    yaml_emitter_delete(&em);
    size_t len = out.len;
    char *text = r == 0 ? ck__buf_take(&out) : NULL;
    if (!text) {
        ck__buf_release(&out);
        return NULL;
    }
    if (ret_len)
        *ret_len = len;
    return text;
}
