/*
 * labels.c - label selectors: parse, match, render.
 *
 * Mirrors apimachinery pkg/labels: a selector is a conjunction of
 * requirements, each a key, an operator and a value set:
 *
 *   k=v  k==v  k!=v  k in (a,b)  k notin (a,b)  k  !k  k>5  k<5
 *
 * The lexer splits on white space and the specials ! = ( ) , < >; the words
 * "in" and "notin" are operators only where an operator is expected. Keys
 * must be qualified names and values label values. Requirements are kept
 * sorted by key (stable) and value sets sorted and unique, so the string
 * form is canonical, as Kubernetes' Selector.String() is.
 *
 * A selector is immutable after parsing and may be shared between threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

enum op {
    OP_EQUALS,
    OP_DOUBLE_EQUALS,
    OP_NOT_EQUALS,
    OP_IN,
    OP_NOT_IN,
    OP_EXISTS,
    OP_DOES_NOT_EXIST,
    OP_GT,
    OP_LT
};

struct requirement {
    char *key;
    enum op op;
    char **values; /* sorted, unique */
    size_t n_values;
};

struct ck_label_selector {
    struct requirement *reqs;
    size_t n_reqs;
};

enum token_kind {
    T_END,
    T_IDENT,
    T_BANG,
    T_EQ,
    T_DEQ,
    T_NEQ,
    T_LPAREN,
    T_RPAREN,
    T_COMMA,
    T_GT,
    T_LT,
    T_IN,
    T_NOTIN
};

struct lexer {
    const char *p;
    enum token_kind kind;
    char *text; /* for T_IDENT (and T_IN/T_NOTIN, which may be identifiers) */
};

static bool is_special(char c)
{
    return c == '!' || c == '=' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Advances to the next token. Returns -1 only when out of memory. */
static int lex(struct lexer *lx)
{
    free(lx->text);
    lx->text = NULL;
    while (is_space(*lx->p))
        lx->p++;
    char c = *lx->p;
    if (c == '\0') {
        lx->kind = T_END;
        return 0;
    }
    if (is_special(c)) {
        lx->p++;
        switch (c) {
        case '!':
            if (*lx->p == '=') {
                lx->p++;
                lx->kind = T_NEQ;
            } else {
                lx->kind = T_BANG;
            }
            return 0;
        case '=':
            if (*lx->p == '=') {
                lx->p++;
                lx->kind = T_DEQ;
            } else {
                lx->kind = T_EQ;
            }
            return 0;
        case '(':
            lx->kind = T_LPAREN;
            return 0;
        case ')':
            lx->kind = T_RPAREN;
            return 0;
        case ',':
            lx->kind = T_COMMA;
            return 0;
        case '>':
            lx->kind = T_GT;
            return 0;
        default:
            lx->kind = T_LT;
            return 0;
        }
    }
    const char *start = lx->p;
    while (*lx->p && !is_space(*lx->p) && !is_special(*lx->p))
        lx->p++;
    lx->text = strndup(start, (size_t)(lx->p - start));
    if (!lx->text)
        return -1;
    if (strcmp(lx->text, "in") == 0)
        lx->kind = T_IN;
    else if (strcmp(lx->text, "notin") == 0)
        lx->kind = T_NOTIN;
    else
        lx->kind = T_IDENT;
    return 0;
}

static int cmp_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void requirement_release(struct requirement *r)
{
    free(r->key);
    for (size_t i = 0; i < r->n_values; i++)
        free(r->values[i]);
    free(r->values);
}

struct ck_label_selector *ck_label_selector_free(struct ck_label_selector *s)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->n_reqs; i++)
        requirement_release(&s->reqs[i]);
    free(s->reqs);
    free(s);
    return NULL;
}

static int fail(struct ck_err *reterr, const char *detail)
{
    return ck_err_set(reterr, CK_EINVAL, "unable to parse requirement: %s", detail);
}

static int add_value(struct requirement *r, const char *value)
{
    char **values = ck__realloc(r->values, (r->n_values + 1) * sizeof(*values));
    if (!values)
        return CK_ENOMEM;
    r->values = values;
    r->values[r->n_values] = ck__strdup(value);
    if (!r->values[r->n_values])
        return CK_ENOMEM;
    r->n_values++;
    return 0;
}

/* Sorts and de-duplicates the value set. */
static void normalise_values(struct requirement *r)
{
    if (r->n_values < 2)
        return;
    qsort(r->values, r->n_values, sizeof(*r->values), cmp_strings);
    size_t out = 1;
    for (size_t i = 1; i < r->n_values; i++) {
        if (strcmp(r->values[i], r->values[out - 1]) == 0)
            free(r->values[i]);
        else
            r->values[out++] = r->values[i];
    }
    r->n_values = out;
}

static bool is_integer(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Checks a requirement's key and values as Kubernetes' NewRequirement does. */
static int check_requirement(const struct requirement *r, struct ck_err *reterr)
{
    struct ck_field_errors errs = {0};
    char buf[1024];
    int result = 0;
    if (!ck_validate_qualified_name(r->key, "key", &errs)) {
        char *msg = ck_field_error_string(&errs.items[0]);
        snprintf(buf, sizeof(buf), "%s", msg ? msg : "invalid key");
        free(msg);
        result = fail(reterr, buf);
        goto out;
    }
    if ((r->op == OP_IN || r->op == OP_NOT_IN) && r->n_values == 0) {
        result = fail(reterr, "for 'in', 'notin' operators, values set can't be empty");
        goto out;
    }
    for (size_t i = 0; i < r->n_values; i++) {
        if ((r->op == OP_GT || r->op == OP_LT) && !is_integer(r->values[i])) {
            snprintf(buf, sizeof(buf), "for 'Gt', 'Lt' operators, the value must be an integer: %s",
                     r->values[i]);
            result = fail(reterr, buf);
            goto out;
        }
        if (!ck_validate_label_value(r->values[i], "values[0]", &errs)) {
            char *msg = ck_field_error_string(&errs.items[0]);
            snprintf(buf, sizeof(buf), "%s", msg ? msg : "invalid value");
            free(msg);
            result = fail(reterr, buf);
            goto out;
        }
    }
out:
    ck_field_errors_release(&errs);
    return result;
}

static int append_requirement(struct ck_label_selector *s, struct requirement *r)
{
    struct requirement *reqs = ck__realloc(s->reqs, (s->n_reqs + 1) * sizeof(*reqs));
    if (!reqs)
        return CK_ENOMEM;
    s->reqs = reqs;
    s->reqs[s->n_reqs++] = *r;
    memset(r, 0, sizeof(*r));
    return 0;
}

/* Parses one requirement starting at the current token. */
/* The operator a token spells after a key; false when it spells none. */
static bool operator_of(enum token_kind token, enum op *ret)
{
    static const struct {
        enum token_kind token;
        enum op op;
    } table[] = {
        {T_EQ, OP_EQUALS},      {T_DEQ, OP_DOUBLE_EQUALS},
        {T_NEQ, OP_NOT_EQUALS}, {T_GT, OP_GT},
        {T_LT, OP_LT},          {T_IN, OP_IN},
        {T_NOTIN, OP_NOT_IN},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (table[i].token == token) {
            *ret = table[i].op;
            return true;
        }
    }
    return false;
}

static int parse_requirement(struct lexer *lx, struct requirement *r, struct ck_err *reterr)
{
    bool negated = false;
    if (lx->kind == T_BANG) {
        negated = true;
        if (lex(lx) < 0)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (lx->kind != T_IDENT)
        return fail(reterr, "found unexpected token, expected: identifier");
    r->key = lx->text;
    lx->text = NULL;
    if (lex(lx) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (negated) {
        r->op = OP_DOES_NOT_EXIST;
        if (lx->kind != T_END && lx->kind != T_COMMA)
            return fail(reterr, "found unexpected token after '!key', expected: ',' or end");
        return check_requirement(r, reterr);
    }
    if (lx->kind == T_END || lx->kind == T_COMMA) {
        r->op = OP_EXISTS;
        return check_requirement(r, reterr);
    }
    if (!operator_of(lx->kind, &r->op))
        return fail(reterr, "found unexpected token, expected: in, notin, =, ==, !=, gt, lt");
    if (lex(lx) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");

    if (r->op == OP_IN || r->op == OP_NOT_IN) {
        if (lx->kind != T_LPAREN)
            return fail(reterr, "found unexpected token, expected: '('");
        if (lex(lx) < 0)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        /* (v1, v2, ...): values may be empty strings between commas */
        bool expect_value = true;
        for (;;) {
            if (lx->kind == T_RPAREN) {
                /* `()` and a trailing `,)` both select the empty value, as in Kubernetes */
                if (expect_value && add_value(r, "") < 0)
                    return ck_err_set(reterr, CK_ENOMEM, "out of memory");
                break;
            }
            if (lx->kind == T_COMMA) {
                if (expect_value && add_value(r, "") < 0)
                    return ck_err_set(reterr, CK_ENOMEM, "out of memory");
                expect_value = true;
            } else if (expect_value &&
                       (lx->kind == T_IDENT || lx->kind == T_IN || lx->kind == T_NOTIN)) {
                if (add_value(r, lx->text) < 0)
                    return ck_err_set(reterr, CK_ENOMEM, "out of memory");
                expect_value = false;
            } else {
                return fail(reterr, "found unexpected token, expected: ',' or ')'");
            }
            if (lex(lx) < 0)
                return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
        if (lex(lx) < 0) /* past ')' */
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    } else {
        /* A single value, possibly empty (`k=` selects the empty value). */
        if (lx->kind == T_IDENT || lx->kind == T_IN || lx->kind == T_NOTIN) {
            if (add_value(r, lx->text) < 0)
                return ck_err_set(reterr, CK_ENOMEM, "out of memory");
            if (lex(lx) < 0)
                return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        } else if (lx->kind == T_END || lx->kind == T_COMMA) {
            if (r->op == OP_GT || r->op == OP_LT)
                return fail(reterr, "found unexpected end, expected: an integer value");
            if (add_value(r, "") < 0)
                return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        } else {
            return fail(reterr, "found unexpected token, expected: a value");
        }
    }
    if (lx->kind != T_END && lx->kind != T_COMMA)
        return fail(reterr, "found unexpected token, expected: ',' or end");
    normalise_values(r);
    return check_requirement(r, reterr);
}

static int cmp_requirements(const void *a, const void *b)
{
    return strcmp(((const struct requirement *)a)->key, ((const struct requirement *)b)->key);
}

/* Insertion sort by key: stable, so requirements on one key keep their order. */
static void sort_requirements(struct ck_label_selector *s)
{
    for (size_t i = 1; i < s->n_reqs; i++) {
        struct requirement cur = s->reqs[i];
        size_t j = i;
        while (j > 0 && cmp_requirements(&s->reqs[j - 1], &cur) > 0) {
            s->reqs[j] = s->reqs[j - 1];
            j--;
        }
        s->reqs[j] = cur;
    }
}

int ck_label_selector_parse(const char *text, struct ck_label_selector **ret_selector,
                            struct ck_err *reterr)
{
    struct ck_label_selector *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct lexer lx = {.p = text};
    int r = 0;
    if (lex(&lx) < 0) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_fail;
    }
    while (lx.kind != T_END) {
        struct requirement req = {0};
        r = parse_requirement(&lx, &req, reterr);
        if (r == 0)
            r = append_requirement(s, &req);
        requirement_release(&req);
        if (r < 0)
            goto out_fail;
        if (lx.kind == T_COMMA) {
            if (lex(&lx) < 0) {
                r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
                goto out_fail;
            }
            if (lx.kind == T_END) {
                r = fail(reterr, "found unexpected end after ',', expected: identifier");
                goto out_fail;
            }
        }
    }
    free(lx.text);
    sort_requirements(s);
    *ret_selector = s;
    return 0;

out_fail:
    free(lx.text);
    ck_label_selector_free(s);
    return r;
}

int ck_label_selector_from_object(const json_t *selector, struct ck_label_selector **ret_selector,
                                  struct ck_err *reterr)
{
    struct ck_label_selector *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = 0;
    if (selector && !json_is_object(selector)) {
        r = ck_err_set(reterr, CK_EINVAL, "a label selector must be an object");
        goto out_fail;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)json_object_get(selector, "matchLabels"), key, value)
    {
        struct requirement req = {.op = OP_EQUALS};
        req.key = ck__strdup(key);
        if (!json_is_string(value))
            r = ck_err_set(reterr, CK_EINVAL, "matchLabels[%s] must be a string", key);
        else if (!req.key || add_value(&req, json_string_value(value)) < 0)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        else
            r = check_requirement(&req, reterr);
        if (r == 0)
            r = append_requirement(s, &req);
        requirement_release(&req);
        if (r < 0)
            goto out_fail;
    }
    size_t i;
    json_t *expr;
    json_array_foreach(json_object_get(selector, "matchExpressions"), i, expr)
    {
        struct requirement req = {0};
        const char *op = json_string_value(json_object_get(expr, "operator"));
        const char *k = json_string_value(json_object_get(expr, "key"));
        json_t *values = json_object_get(expr, "values");
        size_t n_values = json_array_size(values);
        if (!k || !op) {
            r = ck_err_set(reterr, CK_EINVAL, "matchExpressions[%zu] needs key and operator", i);
            goto out_fail;
        }
        if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0) {
            req.op = strcmp(op, "In") == 0 ? OP_IN : OP_NOT_IN;
        } else if (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0) {
            req.op = strcmp(op, "Exists") == 0 ? OP_EXISTS : OP_DOES_NOT_EXIST;
            if (n_values > 0) {
                r = ck_err_set(
                    reterr, CK_EINVAL,
                    "values: Invalid value: %zu: values set must be empty for exists and does not exist",
                    n_values);
                goto out_fail;
            }
        } else {
            r = ck_err_set(reterr, CK_EINVAL, "\"%s\" is not a valid label selector operator", op);
            goto out_fail;
        }
        req.key = ck__strdup(k);
        size_t j;
        json_t *v;
        json_array_foreach(values, j, v)
        {
            if (!json_is_string(v)) {
                r = ck_err_set(reterr, CK_EINVAL, "matchExpressions[%zu].values must be strings",
                               i);
                break;
            }
            if (add_value(&req, json_string_value(v)) < 0) {
                r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
                break;
            }
        }
        if (r == 0 && !req.key)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        if (r == 0) {
            normalise_values(&req);
            r = check_requirement(&req, reterr);
        }
        if (r == 0)
            r = append_requirement(s, &req);
        requirement_release(&req);
        if (r < 0)
            goto out_fail;
    }
    sort_requirements(s);
    *ret_selector = s;
    return 0;

out_fail:
    ck_label_selector_free(s);
    return r;
}

static bool has_value(const struct requirement *r, const char *v)
{
    return bsearch(&v, r->values, r->n_values, sizeof(*r->values), cmp_strings) != NULL;
}

static bool requirement_matches(const struct requirement *r, const json_t *labels)
{
    const char *v = json_string_value(json_object_get(labels, r->key));
    switch (r->op) {
    case OP_EQUALS:
    case OP_DOUBLE_EQUALS:
    case OP_IN:
        return v && has_value(r, v);
    case OP_NOT_EQUALS:
    case OP_NOT_IN:
        return !v || !has_value(r, v);
    case OP_EXISTS:
        return v != NULL;
    case OP_DOES_NOT_EXIST:
        return v == NULL;
    case OP_GT:
    case OP_LT: {
        if (!v || !is_integer(v))
            return false;
        long long have = strtoll(v, NULL, 10);
        long long want = strtoll(r->values[0], NULL, 10);
        return r->op == OP_GT ? have > want : have < want;
    }
    }
    return false;
}

bool ck_label_selector_matches(const struct ck_label_selector *s, const json_t *labels)
{
    for (size_t i = 0; i < s->n_reqs; i++)
        if (!requirement_matches(&s->reqs[i], labels))
            return false;
    return true;
}

bool ck_label_selector_is_empty(const struct ck_label_selector *s)
{
    return s->n_reqs == 0;
}

char *ck_label_selector_string(const struct ck_label_selector *s)
{
    static const char *const ops[] = {
        [OP_EQUALS] = "=", [OP_DOUBLE_EQUALS] = "==", [OP_NOT_EQUALS] = "!=",
        [OP_IN] = " in ",  [OP_NOT_IN] = " notin ",   [OP_GT] = ">",
        [OP_LT] = "<"};
    struct ck__buf t = {0};
    for (size_t i = 0; i < s->n_reqs; i++) {
        const struct requirement *r = &s->reqs[i];
        if (i > 0)
            ck__buf_adds(&t, ",");
        if (r->op == OP_DOES_NOT_EXIST)
            ck__buf_adds(&t, "!");
        ck__buf_adds(&t, r->key);
        if (r->op == OP_EXISTS || r->op == OP_DOES_NOT_EXIST)
            continue;
        ck__buf_adds(&t, ops[r->op]);
        bool set = r->op == OP_IN || r->op == OP_NOT_IN;
        if (set)
            ck__buf_adds(&t, "(");
        for (size_t j = 0; j < r->n_values; j++) {
            if (j > 0)
                ck__buf_adds(&t, ",");
            ck__buf_adds(&t, r->values[j]);
        }
        if (set)
            ck__buf_adds(&t, ")");
    }
    return ck__buf_take(&t);
}
