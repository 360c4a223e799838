/*
 * jsonpath.c - Kubernetes' JSONPath (k8s.io/client-go/util/jsonpath), the
 * query language of a CustomResourceDefinition's additionalPrinterColumns.
 *
 * Kubernetes parses a column's jsonPath as the template "{<jsonPath>}" and
 * prints the first value it selects, missing keys allowed
 * (apiextensions-apiserver's tableconvertor). This file parses the inside of
 * that one action with client-go's grammar and evaluates it over a jansson
 * value:
 *
 *   .name  ..name  .*  ['key']  [0]  [-1]  [1:3]  [::2]  [*]  [0,2]
 *   [?(@.type=="Ready")]  [?(@.x)]  @  $  "text"  'text'  12  1.5  true
 *
 * (a '}' ends the action: what follows it is template text, which the first
 * value never includes)
 * with client-go's quirks: a field runs to the next . , [ ] $ @ { } space
 * (a backslash escapes one), ['a.b'] is the two fields a and b, ["key"] is
 * an invalid array index, a filter compares one value of the same basic type
 * (integer with integer, real with real, string, boolean for == and !=)
 * and anything else is an evaluation error. Parse errors carry client-go's
 * messages. An evaluation error or an index out of bounds selects nothing,
 * as the table convertor prints no cell then.
 *
 * Limits (docs/limits.md): a path of at most CK_JSONPATH_MAX bytes, 64
 * steps per list, 8 levels of nested filters and unions, and at most 4,096
 * values selected at any step (more is an evaluation error).
 *
 * Threading: pure functions over their arguments.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

#define MAX_STEPS  64
#define MAX_DEPTH  8
#define MAX_VALUES 4096

enum step_type {
    STEP_FIELD,     /* .name; "" is the value itself */
    STEP_WILDCARD,  /* .* */
    STEP_RECURSIVE, /* .. */
    STEP_SLICE,     /* [a:b:c], [n], [*] */
    STEP_UNION,     /* [x,y] */
    STEP_FILTER,    /* [?(left op right)] */
    STEP_LITERAL,   /* "text", 12, 1.5, true */
    STEP_IDENTIFIER /* range, end, ...: unsupported, an evaluation error */
};

struct path;

struct slice_param {
    bool known, derived;
    long value;
};

struct step {
    enum step_type type;
    char *name;                  /* FIELD */
    struct slice_param param[3]; /* SLICE */
    struct path **alternatives;  /* UNION */
    size_t n_alternatives;
    struct path *left, *right; /* FILTER; right NULL: exists */
    char op[4];
    json_t *literal; /* LITERAL */
};

struct path {
    struct step steps[MAX_STEPS];
    size_t n;
};

static void path_free(struct path *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        struct step *s = &p->steps[i];
        free(s->name);
        for (size_t j = 0; j < s->n_alternatives; j++)
            path_free(s->alternatives[j]);
        free(s->alternatives);
        path_free(s->left);
        path_free(s->right);
        json_decref(s->literal);
    }
    free(p);
}

/* ---- parsing ------------------------------------------------------------ */

struct parser {
    const char *in;
    size_t len, pos;
    int depth;
    struct ck_err *err;
};

static int parse_text(const char *text, size_t len, int depth, struct path **ret,
                      struct ck_err *reterr);

static struct step *add_step(struct parser *p, struct path *path, enum step_type type)
{
    if (path->n >= MAX_STEPS) {
        ck_err_set(p->err, CK_EINVAL, "a JSONPath may have at most %d steps", MAX_STEPS);
        return NULL;
    }
    struct step *s = &path->steps[path->n++];
    memset(s, 0, sizeof(*s));
    s->type = type;
    return s;
}

static bool is_terminator(char c)
{
    return c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '.' || c == ',' ||
           c == '[' || c == ']' || c == '$' || c == '@' || c == '{' || c == '}';
}

/* A UTF-8 letter or digit counts as alphanumeric, as Go's unicode tables mostly agree. */
static bool is_alnum(unsigned char c)
{
    return c == '_' || isalnum(c) || c >= 0x80;
}

static int parse_field(struct parser *p, struct path *path)
{
    size_t start = p->pos;
    while (p->pos < p->len) {
        char c = p->in[p->pos];
        if (c == '\\') {
            p->pos += p->pos + 1 < p->len ? 2 : 1;
            continue;
        }
        if (is_terminator(c))
            break;
        p->pos++;
    }
    size_t n = p->pos - start;
    if (n == 1 && p->in[start] == '*')
        return add_step(p, path, STEP_WILDCARD) ? 0 : CK_EINVAL;
    struct step *s = add_step(p, path, STEP_FIELD);
    if (!s)
        return CK_EINVAL;
    s->name = malloc(n + 1);
    if (!s->name)
        return ck_err_no_memory(p->err);
    size_t o = 0;
    for (size_t i = start; i < start + n; i++)
        if (p->in[i] != '\\')
            s->name[o++] = p->in[i];
    s->name[o] = '\0';
    return 0;
}

static int add_literal(struct parser *p, struct path *path, json_t *value)
{
    if (!value)
        return ck_err_no_memory(p->err);
    struct step *s = add_step(p, path, STEP_LITERAL);
    if (!s) {
        json_decref(value);
        return CK_EINVAL;
    }
    s->literal = value;
    return 0;
}

/* Go's strconv.Atoi, then ParseFloat, of a run of sign, digits and dots. */
static int parse_number(struct parser *p, struct path *path)
{
    size_t start = p->pos;
    if (p->in[p->pos] == '+' || p->in[p->pos] == '-')
        p->pos++;
    while (p->pos < p->len && (p->in[p->pos] == '.' || isdigit((unsigned char)p->in[p->pos])))
        p->pos++;
    char text[64];
    size_t n = p->pos - start;
    if (n >= sizeof(text))
        return ck_err_set(p->err, CK_EINVAL, "cannot parse number %.*s", (int)n, p->in + start);
    memcpy(text, p->in + start, n);
    text[n] = '\0';
    char *end;
    errno = 0;
    long long i = strtoll(text, &end, 10);
    if (n > 0 && *end == '\0' && errno == 0 && isdigit((unsigned char)text[n - 1]))
        return add_literal(p, path, json_integer(i));
    errno = 0;
    double d = strtod(text, &end);
    /* ParseFloat takes "1.", ".5", "+1.5", not "." nor "1.2.3" */
    if (n > 0 && *end == '\0' && errno == 0 && strpbrk(text, "0123456789"))
        return add_literal(p, path, json_real(d));
    return ck_err_set(p->err, CK_EINVAL, "cannot parse number %s", text);
}

static int parse_identifier(struct parser *p, struct path *path)
{
    size_t start = p->pos;
    while (p->pos < p->len && !is_terminator(p->in[p->pos]))
        p->pos++;
    size_t n = p->pos - start;
    if (n == 4 && memcmp(p->in + start, "true", 4) == 0)
        return add_literal(p, path, json_true());
    if (n == 5 && memcmp(p->in + start, "false", 5) == 0)
        return add_literal(p, path, json_false());
    return add_step(p, path, STEP_IDENTIFIER) ? 0 : CK_EINVAL;
}

/* Go's strconv.UnquoteChar subset: the simple escapes, \xHH, \uHHHH are kept verbatim-free. */
static int parse_quote(struct parser *p, struct path *path, char quote)
{
    size_t start = p->pos; /* after the opening quote */
    for (;;) {
        if (p->pos >= p->len || p->in[p->pos] == '\n')
            return ck_err_set(p->err, CK_EINVAL, "unterminated quoted string");
        char c = p->in[p->pos++];
        if (c == quote && p->in[p->pos - 2] != '\\')
            break;
    }
    size_t n = p->pos - 1 - start;
    char *text = malloc(n + 1);
    if (!text)
        return ck_err_no_memory(p->err);
    size_t o = 0;
    for (size_t i = start; i < start + n; i++) {
        char c = p->in[i];
        if (c == quote) {
            free(text);
            return ck_err_set(p->err, CK_EINVAL, "unquote string %.*s error invalid syntax",
                              (int)n + 2, p->in + start - 1);
        }
        if (c != '\\') {
            text[o++] = c;
            continue;
        }
        if (++i >= start + n) {
            free(text);
            return ck_err_set(p->err, CK_EINVAL, "unquote string %.*s error invalid syntax",
                              (int)n + 2, p->in + start - 1);
        }
        static const char from[] = "abfnrtv\\'\"", to[] = "\a\b\f\n\r\t\v\\'\"";
        const char *at = strchr(from, p->in[i]);
        if (!at || (p->in[i] == '\'' && quote != '\'') || (p->in[i] == '"' && quote != '"')) {
            free(text);
            return ck_err_set(p->err, CK_EINVAL, "unquote string %.*s error invalid syntax",
                              (int)n + 2, p->in + start - 1);
        }
        text[o++] = to[at - from];
    }
    text[o] = '\0';
    int r = add_literal(p, path, json_stringn(text, o));
    free(text);
    return r;
}

/* client-go's sliceOperatorRex: ^(-?\d*)(:-?\d*)?(:-?\d*)?$ */
static bool parse_slice(const char *text, size_t n, struct slice_param param[3])
{
    const char *parts[3] = {NULL, NULL, NULL};
    size_t lens[3] = {0, 0, 0};
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || text[i] == ':') {
            if (k >= 3)
                return false;
            parts[k] = text + start;
            lens[k++] = i - start;
            start = i + 1;
        }
    }
    for (size_t i = 0; i < k; i++) {
        size_t j = parts[i][0] == '-' ? 1 : 0;
        for (; j < lens[i]; j++)
            if (!isdigit((unsigned char)parts[i][j]))
                return false;
    }
    for (size_t i = 0; i < 3; i++) {
        param[i] = (struct slice_param){0};
        if (i < k && lens[i] > 0) {
            char buf[32];
            if (lens[i] >= sizeof(buf) || (lens[i] == 1 && parts[i][0] == '-'))
                return false; /* "array index - is not a number" */
            memcpy(buf, parts[i], lens[i]);
            buf[lens[i]] = '\0';
            errno = 0;
            long v = strtol(buf, NULL, 10);
            if (errno)
                return false;
            param[i].known = true;
            param[i].value = v;
        } else if (i == 1 && k < 2) {
            /* no colon at all: [n] is [n:n+1] */
            param[1].known = true;
            param[1].value = param[0].value + 1;
            param[1].derived = true;
        }
    }
    return true;
}

static int parse_array(struct parser *p, struct path *path)
{
    size_t start = p->pos; /* after '[' */
    while (p->pos < p->len && p->in[p->pos] != ']' && p->in[p->pos] != '\n')
        p->pos++;
    if (p->pos >= p->len || p->in[p->pos] == '\n')
        return ck_err_set(p->err, CK_EINVAL, "unterminated array");
    const char *text = p->in + start;
    size_t n = p->pos - start;
    p->pos++; /* ']' */
    if (n == 1 && text[0] == '*')
        text = ":";

    if (memchr(text, ',', n)) {
        if (p->depth >= MAX_DEPTH)
            return ck_err_set(p->err, CK_EINVAL, "a JSONPath may nest at most %d levels",
                              MAX_DEPTH);
        struct step *s = add_step(p, path, STEP_UNION);
        if (!s)
            return CK_EINVAL;
        size_t at = 0;
        while (at <= n) {
            const char *comma = memchr(text + at, ',', n - at);
            size_t end = comma ? (size_t)(comma - text) : n;
            size_t a = at, b = end;
            while (a < b && text[a] == ' ')
                a++;
            while (b > a && text[b - 1] == ' ')
                b--;
            char *sub = malloc(b - a + 3);
            struct path **alts = realloc(s->alternatives, (s->n_alternatives + 1) * sizeof(*alts));
            if (!sub || !alts) {
                free(sub);
                if (alts)
                    s->alternatives = alts;
                return ck_err_no_memory(p->err);
            }
            s->alternatives = alts;
            sub[0] = '[';
            memcpy(sub + 1, text + a, b - a);
            sub[b - a + 1] = ']';
            sub[b - a + 2] = '\0';
            int r = parse_text(sub, b - a + 2, p->depth + 1, &alts[s->n_alternatives], p->err);
            free(sub);
            if (r < 0)
                return r;
            s->n_alternatives++;
            at = end + 1;
        }
        return 0;
    }

    /* ['key']: parsed as the action ".key" (so ['a.b'] is two fields, as in client-go) */
    if (n >= 2 && text[0] == '\'' && text[n - 1] == '\'' && !memchr(text + 1, '\'', n - 2)) {
        char *sub = malloc(n);
        if (!sub)
            return ck_err_no_memory(p->err);
        sub[0] = '.';
        memcpy(sub + 1, text + 1, n - 2);
        sub[n - 1] = '\0';
        struct path *keyed = NULL;
        int r = parse_text(sub, n - 1, p->depth, &keyed, p->err);
        free(sub);
        if (r < 0)
            return r;
        for (size_t i = 0; i < keyed->n && r == 0; i++) {
            if (path->n >= MAX_STEPS)
                r = ck_err_set(p->err, CK_EINVAL, "a JSONPath may have at most %d steps",
                               MAX_STEPS);
            else
                path->steps[path->n++] = keyed->steps[i];
            if (r == 0)
                memset(&keyed->steps[i], 0, sizeof(keyed->steps[i]));
        }
        path_free(keyed);
        return r;
    }

    struct step *s = add_step(p, path, STEP_SLICE);
    if (!s)
        return CK_EINVAL;
    if (!parse_slice(text, n, s->param))
        return ck_err_set(p->err, CK_EINVAL, "invalid array index %.*s", (int)n, text);
    return 0;
}

/* client-go's filter split: ^([^!<>=]+)([!<>=]+)(.+?)$ */
static int parse_filter(struct parser *p, struct path *path)
{
    size_t start = p->pos; /* after "[?(" */
    bool begin = false, end = false;
    char pair = 0;
    for (;;) {
        if (p->pos >= p->len || p->in[p->pos] == '\n')
            return ck_err_set(p->err, CK_EINVAL, "unterminated filter");
        char c = p->in[p->pos++];
        if (c == '"' || c == '\'') {
            if (!begin) {
                begin = true;
                pair = c;
                continue;
            }
            if (p->in[p->pos - 2] != '\\' && c == pair)
                end = true;
        } else if (c == ')' && begin == end) {
            break;
        }
    }
    if (p->pos >= p->len || p->in[p->pos] != ']')
        return ck_err_set(p->err, CK_EINVAL, "unclosed array expect ]");
    p->pos++;
    const char *text = p->in + start;
    size_t n = p->pos - 2 - start;
    if (p->depth >= MAX_DEPTH)
        return ck_err_set(p->err, CK_EINVAL, "a JSONPath may nest at most %d levels", MAX_DEPTH);
    struct step *s = add_step(p, path, STEP_FILTER);
    if (!s)
        return CK_EINVAL;
    size_t left = 0;
    while (left < n && !strchr("!<>=", text[left]))
        left++;
    size_t op_end = left;
    while (op_end < n && strchr("!<>=", text[op_end]))
        op_end++;
    if (left == 0 || op_end == left || op_end == n)
        return parse_text(text, n, p->depth + 1, &s->left, p->err);
    size_t op_len = op_end - left;
    if (op_len >= sizeof(s->op))
        op_len = sizeof(s->op) - 1; /* no operator is that long: refused when evaluated */
    memcpy(s->op, text + left, op_len);
    s->op[op_len] = op_end - left >= sizeof(s->op) ? '?' : '\0';
    int r = parse_text(text, left, p->depth + 1, &s->left, p->err);
    if (r == 0)
        r = parse_text(text + op_end, n - op_end, p->depth + 1, &s->right, p->err);
    return r;
}

static int parse_action(struct parser *p, struct path *path)
{
    while (p->pos < p->len) {
        const char *at = p->in + p->pos;
        size_t left = p->len - p->pos;
        int r = 0;
        if (left >= 3 && memcmp(at, "[?(", 3) == 0) {
            p->pos += 3;
            r = parse_filter(p, path);
        } else if (left >= 2 && memcmp(at, "..", 2) == 0) {
            if (path->n > 0 && path->steps[path->n - 1].type == STEP_RECURSIVE)
                return ck_err_set(p->err, CK_EINVAL, "invalid multiple recursive descent");
            p->pos += 2;
            if (!add_step(p, path, STEP_RECURSIVE))
                return CK_EINVAL;
            if (p->pos < p->len && is_alnum((unsigned char)p->in[p->pos]))
                r = parse_field(p, path);
        } else {
            unsigned char c = (unsigned char)*at;
            if (c == '\r' || c == '\n')
                return ck_err_set(p->err, CK_EINVAL, "unclosed action");
            if (c == '}' && p->depth == 0)
                return 0; /* the action ends; what follows is template text, never printed */
            if (c == ' ' || c == '@' || c == '$') {
                p->pos++;
            } else if (c == '[') {
                p->pos++;
                r = parse_array(p, path);
            } else if (c == '"' || c == '\'') {
                p->pos++;
                r = parse_quote(p, path, (char)c);
            } else if (c == '.') {
                p->pos++;
                r = parse_field(p, path);
            } else if (c == '+' || c == '-' || isdigit(c)) {
                r = parse_number(p, path);
            } else if (is_alnum(c)) {
                r = parse_identifier(p, path);
            } else {
                return ck_err_set(p->err, CK_EINVAL,
                                  "unrecognized character in action: U+%04X '%c'", c, c);
            }
        }
        if (r < 0)
            return r;
    }
    return 0;
}

static int parse_text(const char *text, size_t len, int depth, struct path **ret,
                      struct ck_err *reterr)
{
    struct path *path = calloc(1, sizeof(*path));
    if (!path)
        return ck_err_no_memory(reterr);
    struct parser p = {text, len, 0, depth, reterr};
    int r = parse_action(&p, path);
    if (r < 0) {
        path_free(path);
        return r;
    }
    *ret = path;
    return 0;
}

static int parse_path(const char *text, struct path **ret, struct ck_err *reterr)
{
    size_t len = strlen(text);
    if (len > CK_JSONPATH_MAX)
        return ck_err_set(reterr, CK_EINVAL, "a JSONPath may be at most %d bytes", CK_JSONPATH_MAX);
    return parse_text(text, len, 0, ret, reterr);
}

/* ---- evaluation --------------------------------------------------------- */

struct values {
    const json_t **v;
    size_t n, cap;
};

static bool push(struct values *out, const json_t *v)
{
    if (out->n >= MAX_VALUES)
        return false;
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 8;
        const json_t **grown = realloc(out->v, cap * sizeof(*grown));
        if (!grown)
            return false;
        out->v = grown;
        out->cap = cap;
    }
    out->v[out->n++] = v;
    return true;
}

static bool eval_path(const struct path *path, const struct values *input, struct values *out);

/* A container with children, then its descendants' (client-go's evalRecursive). */
static bool descend(const json_t *v, struct values *out, int depth)
{
    if ((!json_is_object(v) || json_object_size(v) == 0) &&
        (!json_is_array(v) || json_array_size(v) == 0))
        return true;
    if (depth > 64 || !push(out, v))
        return false;
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, child)
        {
            if (!descend(child, out, depth + 1))
                return false;
        }
    } else {
        json_array_foreach(v, i, child)
        {
            if (!descend(child, out, depth + 1))
                return false;
        }
    }
    return true;
}

static bool eval_slice(const struct step *s, const json_t *v, struct values *out)
{
    if (!json_is_array(v))
        return false;
    long len = (long)json_array_size(v);
    struct slice_param p[3] = {s->param[0], s->param[1], s->param[2]};
    if (!p[0].known)
        p[0].value = 0;
    if (p[0].value < 0)
        p[0].value += len;
    if (!p[1].known)
        p[1].value = len;
    if (p[1].value < 0 || (p[1].value == 0 && p[1].derived))
        p[1].value += len;
    if (p[1].value == p[0].value)
        return true;
    if (p[0].value >= len || p[0].value < 0 || p[1].value > len || p[1].value < 0 ||
        p[0].value > p[1].value)
        return false;
    long step = 1;
    if (p[2].known) {
        if (p[2].value <= 0)
            return false;
        step = p[2].value;
    }
    for (long i = p[0].value; i < p[1].value; i += step)
        if (!push(out, json_array_get(v, (size_t)i)))
            return false;
    return true;
}

/* text/template's comparison of basic kinds: -1, 0, 1; 2 when the kinds cannot be compared. */
static int compare(const json_t *a, const json_t *b, bool ordered)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_real(a) && json_is_real(b)) {
        double x = json_real_value(a), y = json_real_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_string(a) && json_is_string(b)) {
        int c = strcmp(json_string_value(a), json_string_value(b));
        return c < 0 ? -1 : c > 0;
    }
    if (!ordered && json_is_boolean(a) && json_is_boolean(b))
        return json_is_true(a) == json_is_true(b) ? 0 : 1;
    return 2;
}

static bool single(const struct path *path, const json_t *item, const json_t **ret, bool *found)
{
    const json_t *in[] = {item};
    struct values input = {in, 1, 1}, got = {0};
    bool ok = eval_path(path, &input, &got);
    *found = ok && got.n > 0;
    if (ok && got.n > 1)
        ok = false; /* "can only compare one element at a time" */
    if (*found)
        *ret = got.v[0];
    free(got.v);
    return ok;
}

static bool eval_filter(const struct step *s, const json_t *v, struct values *out)
{
    if (!json_is_array(v))
        return false;
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item)
    {
        const json_t *left = NULL, *right = NULL;
        bool found;
        if (!s->right) {
            const json_t *in[] = {item};
            struct values input = {in, 1, 1}, got = {0};
            bool ok = eval_path(s->left, &input, &got);
            size_t n = got.n;
            free(got.v);
            if (!ok)
                return false;
            if (n > 0 && !push(out, item))
                return false;
            continue;
        }
        if (!single(s->left, item, &left, &found))
            return false;
        if (!found)
            continue;
        if (!single(s->right, item, &right, &found))
            return false;
        if (!found)
            continue;
        const char *op = s->op;
        bool ordered = strcmp(op, "==") != 0 && strcmp(op, "!=") != 0;
        int c = compare(left, right, ordered);
        if (c == 2)
            return false;
        bool pass;
        if (strcmp(op, "==") == 0)
            pass = c == 0;
        else if (strcmp(op, "!=") == 0)
            pass = c != 0;
        else if (strcmp(op, "<") == 0)
            pass = c < 0;
        else if (strcmp(op, ">") == 0)
            pass = c > 0;
        else if (strcmp(op, "<=") == 0)
            pass = c <= 0;
        else if (strcmp(op, ">=") == 0)
            pass = c >= 0;
        else
            return false; /* unrecognized filter operator */
        if (pass && !push(out, item))
            return false;
    }
    return true;
}

static bool eval_step(const struct step *s, const struct values *input, struct values *out)
{
    for (size_t i = 0; i < input->n; i++) {
        const json_t *v = input->v[i];
        const char *key;
        json_t *child;
        size_t j;
        bool ok = true;
        switch (s->type) {
        case STEP_FIELD:
            if (!s->name[0])
                ok = push(out, v);
            else if (json_is_object(v) && (child = json_object_get(v, s->name)))
                ok = push(out, child);
            break;
        case STEP_WILDCARD:
            if (json_is_object(v)) {
                json_object_foreach((json_t *)v, key, child)
                {
                    if (!(ok = push(out, child)))
                        break;
                }
            } else if (json_is_array(v)) {
                json_array_foreach(v, j, child)
                {
                    if (!(ok = push(out, child)))
                        break;
                }
            }
            break;
        case STEP_RECURSIVE:
            ok = descend(v, out, 0);
            break;
        case STEP_SLICE:
            ok = eval_slice(s, v, out);
            break;
        case STEP_FILTER:
            ok = eval_filter(s, v, out);
            break;
        case STEP_UNION:
        case STEP_LITERAL:
        case STEP_IDENTIFIER:
            break;
        }
        if (!ok)
            return false;
    }
    if (s->type == STEP_UNION) {
        for (size_t k = 0; k < s->n_alternatives; k++)
            if (!eval_path(s->alternatives[k], input, out))
                return false;
    } else if (s->type == STEP_LITERAL) {
        return push(out, s->literal);
    } else if (s->type == STEP_IDENTIFIER) {
        return false; /* unrecognized identifier */
    }
    return true;
}

static bool eval_path(const struct path *path, const struct values *input, struct values *out)
{
    struct values cur = {0}, next = {0};
    for (size_t i = 0; i < input->n; i++)
        if (!push(&cur, input->v[i])) {
            free(cur.v);
            return false;
        }
    bool ok = true;
    for (size_t i = 0; ok && i < path->n; i++) {
        next.n = 0;
        ok = eval_step(&path->steps[i], &cur, &next);
        struct values t = cur;
        cur = next;
        next = t;
    }
    for (size_t i = 0; ok && i < cur.n; i++)
        ok = push(out, cur.v[i]);
    free(cur.v);
    free(next.v);
    return ok;
}

/* ---- public ------------------------------------------------------------- */

int ck_jsonpath_check(const char *path, struct ck_err *reterr)
{
    struct path *p = NULL;
    int r = parse_path(path, &p, reterr);
    path_free(p);
    return r;
}

json_t *ck_jsonpath_first(const char *path, const json_t *obj)
{
    struct path *p = NULL;
    if (!obj || parse_path(path, &p, NULL) < 0)
        return NULL;
    const json_t *in[] = {obj};
    struct values input = {in, 1, 1}, out = {0};
    json_t *first = NULL;
    if (eval_path(p, &input, &out) && out.n > 0)
        first = json_incref((json_t *)out.v[0]);
    free(out.v);
    path_free(p);
    return first;
}
