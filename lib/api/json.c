/*
 * json.c - reading JSON text into jansson values, whole or not at all.
 *
 * jansson 2.14's json_loadb() does not survive running out of memory: it
 * reports it as an empty error, as "invalid token" or as a syntax error
 * further on, and when growing the buffer that holds a token fails it drops
 * the byte and goes on, returning a value with a string or a number quietly
 * changed (a uid with a character missing). ck_json_loadb() therefore never
 * lets jansson's parser build a value: it checks the text against jansson's
 * grammar without allocating (so running out of memory cannot be mistaken for
 * bad syntax), then builds the value itself with jansson's constructors,
 * checking every one. Text that is not JSON never reaches jansson's parser
 * either (given memory trouble it can trip an assert and abort): the check
 * says what is wrong in jansson's words ("invalid token", "':' expected",
 * ...) with the line and column.
 *
 * What jansson accepts, and so what the check accepts: an object or array at
 * the top (any value with JSON_DECODE_ANY), RFC 8259 syntax, valid UTF-8, no
 * \u0000, no lone surrogate, integers that fit json_int_t, reals that do not
 * overflow, at most 2048 levels of nesting, nothing after the value. One
 * difference: jansson takes a NUL byte after a number or a literal for the end
 * of the text (`[1,2\0]` reads as [1,2]); here a NUL byte outside a string is
 * an invalid token, as inside one it is a control character.
 *
 * Threading: pure functions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

/* ---- the grammar, without allocating -------------------------------------- */

struct jtext {
    const unsigned char *p, *end;
    const char *why;         /* the first thing wrong, in jansson's words; NULL: nothing */
    const unsigned char *at; /* where */
    bool show_byte;          /* the message names the byte at `at` */
};

/* Records what is wrong at t->p (the first failure only) and returns false. */
static bool jfail(struct jtext *t, const char *why)
{
    if (!t->why) {
        t->why = why;
        t->at = t->p;
        t->show_byte = false;
    }
    return false;
}

static bool jfail_byte(struct jtext *t, const char *why)
{
    bool first = !t->why;
    jfail(t, why);
    t->show_byte = first || t->show_byte;
    return false;
}

#define JTEXT_MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

static void jtext_ws(struct jtext *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r'))
        t->p++;
}

static bool jtext_lit(struct jtext *t, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(t->end - t->p) < n || memcmp(t->p, word, n) != 0)
        return false;
    t->p += n;
    return true;
}

static int jtext_hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* One UTF-8 sequence of at least two bytes, as jansson's utf8_check_full() wants it. */
static bool jtext_utf8(struct jtext *t)
{
    unsigned c = *t->p;
    size_t n = c >= 0xC2 && c <= 0xDF   ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (!n || (size_t)(t->end - t->p) < n)
        return jfail_byte(t, "unable to decode byte");
    unsigned v = c & (0xFFu >> (n + 1));
    for (size_t i = 1; i < n; i++) {
        if ((t->p[i] & 0xC0) != 0x80)
            return jfail_byte(t, "unable to decode byte");
        v = (v << 6) | (t->p[i] & 0x3F);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return jfail_byte(t, "unable to decode byte");
    t->p += n;
    return true;
}

static bool jtext_string(struct jtext *t)
{
    t->p++; /* the opening quote */
    while (t->p < t->end && *t->p != '"') {
        if (*t->p < 0x20)
            return jfail_byte(t, "control character");
        if (*t->p >= 0x80) {
            if (!jtext_utf8(t))
                return false;
            continue;
        }
        if (*t->p++ != '\\')
            continue;
        if (t->p >= t->end)
            return jfail(t, "premature end of input");
        if (strchr("\"\\/bfnrt", *t->p) && *t->p) {
            t->p++;
            continue;
        }
        if (*t->p != 'u' || t->end - t->p < 5 || jtext_hex4(t->p + 1) < 0)
            return jfail(t, "invalid escape");
        int v = jtext_hex4(t->p + 1);
        if (v == 0)
            return jfail(t, "\\u0000 is not allowed without JSON_ALLOW_NUL");
        if (v >= 0xDC00 && v <= 0xDFFF)
            return jfail(t, "invalid Unicode escape"); /* a low surrogate first */
        t->p += 5;
        if (v >= 0xD800 && v <= 0xDBFF) {
            if (t->end - t->p < 6 || t->p[0] != '\\' || t->p[1] != 'u')
                return jfail(t, "invalid Unicode escape");
            int low = jtext_hex4(t->p + 2);
            if (low < 0xDC00 || low > 0xDFFF)
                return jfail(t, "invalid Unicode escape");
            t->p += 6;
        }
    }
    if (t->p >= t->end)
        return jfail(t, "premature end of input");
    t->p++;
    return true;
}

static bool jtext_digits(struct jtext *t)
{
    const unsigned char *start = t->p;
    while (t->p < t->end && *t->p >= '0' && *t->p <= '9')
        t->p++;
    return t->p > start;
}

static bool jtext_number(struct jtext *t)
{
    const unsigned char *start = t->p;
    bool real = false;
    if (*t->p == '-')
        t->p++;
    if (t->p < t->end && *t->p == '0')
        t->p++;
    else if (!jtext_digits(t))
        return jfail(t, "invalid token");
    if (t->p < t->end && *t->p == '.') {
        t->p++;
        real = true;
        if (!jtext_digits(t))
            return jfail(t, "invalid token");
    }
    if (t->p < t->end && (*t->p == 'e' || *t->p == 'E')) {
        t->p++;
        real = true;
        if (t->p < t->end && (*t->p == '+' || *t->p == '-'))
            t->p++;
        if (!jtext_digits(t))
            return jfail(t, "invalid token");
    }
    char buf[512];
    size_t n = (size_t)(t->p - start);
    if (n >= sizeof(buf)) /* an integer this long overflows; a real: let it be */
        return real || jfail(t, "too big integer");
    memcpy(buf, start, n);
    buf[n] = '\0';
    errno = 0;
    if (real) {
        double d = strtod(buf, NULL);
        return !(errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) ||
               jfail(t, "real number overflow");
    }
    (void)strtoll(buf, NULL, 10);
    return errno != ERANGE || jfail(t, "too big integer");
}

static bool jtext_value(struct jtext *t, int depth)
{
    jtext_ws(t);
    if (depth > JTEXT_MAX_DEPTH)
        return jfail(t, "maximum parsing depth reached");
    if (t->p >= t->end)
        return jfail(t, "premature end of input");
    unsigned char open = *t->p;
    if (open == '"')
        return jtext_string(t);
    if (open == '-' || (open >= '0' && open <= '9'))
        return jtext_number(t);
    if (open != '{' && open != '[')
        return jtext_lit(t, "true") || jtext_lit(t, "false") || jtext_lit(t, "null") ||
               jfail(t, "invalid token");
    unsigned char close = open == '{' ? '}' : ']';
    const char *close_expected = open == '{' ? "'}' expected" : "']' expected";
    t->p++;
    jtext_ws(t);
    if (t->p < t->end && *t->p == close) {
        t->p++;
        return true;
    }
    for (;;) {
        if (open == '{') {
            jtext_ws(t);
            if (t->p >= t->end || *t->p != '"')
                return jfail(t, "string or '}' expected");
            if (!jtext_string(t))
                return false;
            jtext_ws(t);
            if (t->p >= t->end || *t->p != ':')
                return jfail(t, "':' expected");
            t->p++;
        }
        if (!jtext_value(t, depth + 1))
            return false;
        jtext_ws(t);
        if (t->p < t->end && *t->p == close) {
            t->p++;
            return true;
        }
        if (t->p >= t->end || *t->p != ',')
            return jfail(t, close_expected);
        t->p++;
    }
}

/* Checks text; on failure t->why and t->at say what and where. */
static bool json_text_is_valid(struct jtext *t, bool any)
{
    jtext_ws(t);
    if (t->p >= t->end || (!any && *t->p != '{' && *t->p != '['))
        return jfail(t, "'[' or '{' expected");
    if (!jtext_value(t, 1))
        return false;
    jtext_ws(t);
    return t->p == t->end || jfail(t, "end of file expected");
}

/* ---- building the value --------------------------------------------------- */

struct build {
    struct jtext t;
    bool reject_duplicates;
    char duplicate[128]; /* the first key found twice (cut to fit) */
};

/* Writes code point v as UTF-8 into out; returns how many bytes. */
static size_t utf8_put(unsigned v, char *out)
{
    if (v < 0x80) {
        out[0] = (char)v;
        return 1;
    }
    if (v < 0x800) {
        out[0] = (char)(0xC0 | (v >> 6));
        out[1] = (char)(0x80 | (v & 0x3F));
        return 2;
    }
    if (v < 0x10000) {
        out[0] = (char)(0xE0 | (v >> 12));
        out[1] = (char)(0x80 | ((v >> 6) & 0x3F));
        out[2] = (char)(0x80 | (v & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (v >> 18));
    out[1] = (char)(0x80 | ((v >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((v >> 6) & 0x3F));
    out[3] = (char)(0x80 | (v & 0x3F));
    return 4;
}

/*
 * Decodes the (checked) string at t->p into a new NUL-terminated buffer (ck__malloc; the
 * caller frees it) and its length into *ret_len, leaving t->p past it. NULL: out of memory.
 */
static char *build_string(struct jtext *t, size_t *ret_len)
{
    const unsigned char *start = ++t->p, *q = start;
    while (*q != '"')
        q += *q == '\\' ? 2 : 1;
    /* a decoded string is never longer than its text */
    char *out = ck__malloc((size_t)(q - start) + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (const unsigned char *p = start; p < q; p++) {
        if (*p != '\\') {
            out[n++] = (char)*p;
            continue;
        }
        static const char escapes[] = "bfnrt", decoded[] = "\b\f\n\r\t";
        const char *simple = *++p ? strchr(escapes, *p) : NULL;
        if (*p != 'u') { /* one character: " \ / or one of escapes */
            out[n++] = simple ? decoded[simple - escapes] : (char)*p;
            continue;
        }
        unsigned v = (unsigned)jtext_hex4(p + 1);
        p += 4;
        if (v >= 0xD800 && v <= 0xDBFF) { /* a surrogate pair, checked */
            unsigned low = (unsigned)jtext_hex4(p + 3);
            v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
            p += 6;
        }
        n += utf8_put(v, out + n);
    }
    out[n] = '\0';
    t->p = q + 1;
    *ret_len = n;
    return out;
}

/* The (checked) number at t->p as a new value, t->p past it; NULL: out of memory. */
static json_t *build_number(struct jtext *t)
{
    const unsigned char *start = t->p;
    jtext_number(t);
    size_t n = (size_t)(t->p - start);
    bool real = memchr(start, '.', n) || memchr(start, 'e', n) || memchr(start, 'E', n);
    char small[64];
    char *text = n < sizeof(small) ? small : ck__malloc(n + 1);
    if (!text)
        return NULL;
    memcpy(text, start, n);
    text[n] = '\0';
    json_t *v = real ? json_real(strtod(text, NULL)) : json_integer(strtoll(text, NULL, 10));
    if (text != small)
        free(text);
    return v;
}

static int build_value(struct build *b, json_t **ret);

/* The members of the (checked) object or array at t->p into container. 0, or as build_value. */
static int build_members(struct build *b, json_t *container)
{
    struct jtext *t = &b->t;
    bool object = *t->p == '{';
    unsigned char close = object ? '}' : ']';
    t->p++;
    jtext_ws(t);
    if (*t->p == close) {
        t->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        size_t key_len = 0;
        if (object) {
            jtext_ws(t);
            key = build_string(t, &key_len);
            if (!key)
                return CK_ENOMEM;
            if (b->reject_duplicates && json_object_getn(container, key, key_len)) {
                snprintf(b->duplicate, sizeof(b->duplicate), "%s", key);
                free(key);
                return CK_EEXIST;
            }
            jtext_ws(t);
            t->p++; /* ':' */
        }
        json_t *value = NULL;
        int r = build_value(b, &value);
        /* the setters take value, and free it when they fail */
        if (r == 0 && (object ? json_object_setn_new_nocheck(container, key, key_len, value)
                              : json_array_append_new(container, value)) < 0)
            r = CK_ENOMEM;
        free(key);
        if (r < 0)
            return r;
        jtext_ws(t);
        if (*t->p++ == close)
            return 0;
    }
}

/* The (checked) value at t->p; 0, CK_ENOMEM, or CK_EEXIST for a duplicate key. */
static int build_value(struct build *b, json_t **ret)
{
    struct jtext *t = &b->t;
    jtext_ws(t);
    json_t *v;
    switch (*t->p) {
    case '"': {
        size_t n;
        char *s = build_string(t, &n);
        v = s ? json_stringn_nocheck(s, n) : NULL; /* checked: valid UTF-8, no NUL */
        free(s);
        break;
    }
    case '{':
    case '[': {
        v = *t->p == '{' ? json_object() : json_array();
        int r = v ? build_members(b, v) : CK_ENOMEM;
        if (r < 0) {
            json_decref(v);
            return r;
        }
        break;
    }
    default: /* the literals are singletons: no allocation */
        if (jtext_lit(t, "true"))
            v = json_true();
        else if (jtext_lit(t, "false"))
            v = json_false();
        else if (jtext_lit(t, "null"))
            v = json_null();
        else
            v = build_number(t);
    }
    if (!v)
        return CK_ENOMEM;
    *ret = v;
    return 0;
}

/* Fills jerr as jansson would: text, then the code in the text's last byte. */
static void set_error(json_error_t *jerr, enum json_error_code code, const char *text)
{
    memset(jerr, 0, sizeof(*jerr));
    jerr->line = -1;
    jerr->column = -1;
    snprintf(jerr->source, sizeof(jerr->source), "<buffer>");
    snprintf(jerr->text, JSON_ERROR_TEXT_LENGTH - 1, "%s", text);
    jerr->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;
}

/* Fills jerr for text that check refused: jansson's words, line and column (from 1). */
static void set_syntax_error(json_error_t *jerr, const struct jtext *check, const char *text)
{
    char msg[JSON_ERROR_TEXT_LENGTH];
    if (check->show_byte && check->at < check->end)
        snprintf(msg, sizeof(msg), "%s 0x%02x", check->why, *check->at);
    else
        snprintf(msg, sizeof(msg), "%s", check->why);
    set_error(jerr, json_error_invalid_syntax, msg);
    const unsigned char *p = (const unsigned char *)text;
    int line = 1, column = 1;
    for (; p < check->at; p++) {
        column++;
        if (*p == '\n')
            line++, column = 1;
    }
    jerr->line = line;
    jerr->column = column;
    jerr->position = (int)(check->at - (const unsigned char *)text);
}

int ck_json_loadb(const char *text, size_t len, size_t flags, json_t **ret_json, json_error_t *jerr)
{
    json_error_t local;
    if (!jerr)
        jerr = &local;
    if (!text)
        len = 0, text = "";
    struct jtext check = {.p = (const unsigned char *)text,
                          .end = (const unsigned char *)text + len};
    if (!json_text_is_valid(&check, flags & JSON_DECODE_ANY)) {
        /* jansson's own parser is not asked why: out of memory, it can abort the process */
        set_syntax_error(jerr, &check, text);
        return CK_EINVAL;
    }
    struct build b = {
        .t = {.p = (const unsigned char *)text, .end = (const unsigned char *)text + len},
        .reject_duplicates = flags & JSON_REJECT_DUPLICATES};
    json_t *v = NULL;
    int r = build_value(&b, &v);
    if (r == CK_EEXIST) {
        char msg[JSON_ERROR_TEXT_LENGTH];
        snprintf(msg, sizeof(msg), "duplicate object key near '\"%s\"'", b.duplicate);
        set_error(jerr, json_error_duplicate_key, msg);
        return CK_EINVAL;
    }
    if (r < 0) {
        set_error(jerr, json_error_out_of_memory, "out of memory");
        return CK_ENOMEM;
    }
    *ret_json = v;
    return 0;
}
