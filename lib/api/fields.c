/*
 * fields.c - field selectors: parse and match.
 *
 * Mirrors apimachinery pkg/fields: terms separated by unescaped commas, each
 * `field=value`, `field==value` or `field!=value`, all of which must hold.
 * In values `\,` `\=` and `\\` escape; any other escape, or an unescaped `,`
 * or `=` inside a value, is an error. Empty terms are skipped, so "" selects
 * everything. Which field labels exist is the kind's business: the API server
 * checks them with ck_field_selector_check_fields() and renders an object's
 * field values with a per-kind getter.
 *
 * A selector is immutable after parsing and may be shared between threads.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

struct term {
    char *field;
    char *value;
    bool negated;
};

struct ck_field_selector {
    struct term *terms;
    size_t n_terms;
};

struct ck_field_selector *ck_field_selector_free(struct ck_field_selector *s)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->n_terms; i++) {
        free(s->terms[i].field);
        free(s->terms[i].value);
    }
    free(s->terms);
    free(s);
    return NULL;
}

/* Unescapes value[0..len) into a new string; NULL with *bad set on a syntax error. */
static char *unescape(const char *value, size_t len, const char **bad)
{
    char *out = ck__malloc(len + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = value[i];
        if (c == '\\') {
            if (i + 1 >= len ||
                (value[i + 1] != '\\' && value[i + 1] != ',' && value[i + 1] != '=')) {
                *bad = "invalid escape sequence";
                free(out);
                return NULL;
            }
            out[n++] = value[++i];
        } else if (c == ',' || c == '=') {
            *bad = "unescaped character";
            free(out);
            return NULL;
        } else {
            out[n++] = c;
        }
    }
    out[n] = '\0';
    return out;
}

/* Splits one term at its first unescaped operator (!=, ==, =). */
static int parse_term(const char *term, size_t len, struct term *ret, struct ck_err *reterr)
{
    static const char *const ops[] = {"!=", "==", "="};
    for (size_t i = 0; i < len; i++) {
        if (term[i] == '\\') {
            i++;
            continue;
        }
        for (size_t o = 0; o < 3; o++) {
            size_t op_len = strlen(ops[o]);
            if (i + op_len <= len && strncmp(term + i, ops[o], op_len) == 0) {
                const char *bad = NULL;
                ret->field = strndup(term, i);
                ret->value = unescape(term + i + op_len, len - i - op_len, &bad);
                ret->negated = o == 0;
                if (bad)
                    return ck_err_set(reterr, CK_EINVAL, "invalid field selector: %s: '%.*s'", bad,
                                      (int)len, term);
                if (!ret->field || !ret->value)
                    return ck_err_set(reterr, CK_ENOMEM, "out of memory");
                return 0;
            }
        }
    }
    return ck_err_set(reterr, CK_EINVAL, "invalid selector: '%.*s'; can't understand '%.*s'",
                      (int)len, term, (int)len, term);
}

int ck_field_selector_parse(const char *text, struct ck_field_selector **ret_selector,
                            struct ck_err *reterr)
{
    struct ck_field_selector *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const char *start = text;
    for (const char *p = text;; p++) {
        if (*p == '\\' && p[1] != '\0') {
            p++;
            continue;
        }
        if (*p != ',' && *p != '\0')
            continue;
        size_t len = (size_t)(p - start);
        if (len > 0) {
            struct term *terms = ck__realloc(s->terms, (s->n_terms + 1) * sizeof(*terms));
            if (!terms) {
                ck_field_selector_free(s);
                return ck_err_set(reterr, CK_ENOMEM, "out of memory");
            }
            s->terms = terms;
            struct term *t = &s->terms[s->n_terms++];
            memset(t, 0, sizeof(*t));
            int r = parse_term(start, len, t, reterr);
            if (r < 0) {
                ck_field_selector_free(s);
                return r;
            }
        }
        if (*p == '\0')
            break;
        start = p + 1;
    }
    *ret_selector = s;
    return 0;
}

int ck_field_selector_check_fields(const struct ck_field_selector *s, const char *const *supported,
                                   struct ck_err *reterr)
{
    for (size_t i = 0; i < s->n_terms; i++) {
        bool known = false;
        for (const char *const *f = supported; *f && !known; f++)
            known = strcmp(*f, s->terms[i].field) == 0;
        if (!known)
            return ck_err_set(reterr, CK_EINVAL, "field label not supported: %s",
                              s->terms[i].field);
    }
    return 0;
}

bool ck_field_selector_matches(const struct ck_field_selector *s, const json_t *obj,
                               ck_field_getter get_field, const void *ctx)
{
    char buf[256];
    for (size_t i = 0; i < s->n_terms; i++) {
        const char *have = get_field(s->terms[i].field, obj, ctx, buf, sizeof(buf));
        bool equal = strcmp(have ? have : "", s->terms[i].value) == 0;
        if (equal == s->terms[i].negated)
            return false;
    }
    return true;
}

const char *ck_field_selector_exact(const struct ck_field_selector *s, const char *field)
{
    for (size_t i = 0; i < s->n_terms; i++)
        if (!s->terms[i].negated && strcmp(s->terms[i].field, field) == 0)
            return s->terms[i].value;
    return NULL;
}

bool ck_field_selector_is_empty(const struct ck_field_selector *s)
{
    return s->n_terms == 0;
}
