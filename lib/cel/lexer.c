/*
 * lexer.c - CEL source text to tokens (google/cel-spec doc/langdef.md, "Syntax").
 *
 * Literals are decoded here so the parser sees values: decimal and hex integers (the
 * magnitude; a '-' before it belongs to the parser), the u/U suffix, floats, and
 * quoted, raw ("r"), bytes ("b") and triple-quoted strings with their escapes. In a
 * string \x, \u, \U and octal escapes stand for code points; in bytes \x and octal
 * stand for octets (and \U is refused, as the spec says). Comments run from // to the
 * end of the line. Reserved words are flagged: the parser refuses them as names of
 * variables or functions, but not as fields or methods after a '.' (as cel-go does).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static bool is_ident_start(int c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void set_error(struct ck__cel_token *t, size_t pos, const char *msg)
{
    t->kind = T_ERROR;
    t->pos = pos;
    t->s = (char *)msg;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reads the escape after the backslash at s[*i]; appends its bytes to out. */
static const char *unescape(const char *s, size_t end, size_t *i, bool bytes, char *out,
                            size_t *olen)
{
    size_t k = *i + 1;
    if (k >= end)
        return "invalid escape sequence";
    char c = s[k];
    const char *simple = "abfnrtv\\?\"'`";
    const char *values = "\a\b\f\n\r\t\v\\?\"'`";
    const char *at = strchr(simple, c);
    if (c && at) {
        out[(*olen)++] = values[at - simple];
        *i = k + 1;
        return NULL;
    }
    uint32_t cp = 0;
    size_t digits = 0;
    bool octet = false;
    if (c == 'x' || c == 'X') {
        digits = 2;
        octet = bytes;
    } else if (c == 'u') {
        digits = 4;
    } else if (c == 'U') {
        if (bytes)
            return "\\U escape in a bytes literal";
        digits = 8;
    } else if (c >= '0' && c <= '3') {
        if (k + 2 >= end || s[k + 1] < '0' || s[k + 1] > '7' || s[k + 2] < '0' || s[k + 2] > '7')
            return "invalid octal escape sequence";
        cp = (uint32_t)((c - '0') * 64 + (s[k + 1] - '0') * 8 + (s[k + 2] - '0'));
        *i = k + 3;
        if (bytes) {
            out[(*olen)++] = (char)cp;
            return NULL;
        }
        *olen += put_utf8(out + *olen, cp);
        return NULL;
    } else {
        return "invalid escape sequence";
    }
    for (size_t d = 0; d < digits; d++) {
        int h = k + 1 + d < end ? hex_value((unsigned char)s[k + 1 + d]) : -1;
        if (h < 0)
            return "invalid hex escape sequence";
        cp = cp * 16 + (uint32_t)h;
    }
    *i = k + 1 + digits;
    if (octet) {
        out[(*olen)++] = (char)cp;
        return NULL;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return "invalid unicode code point";
    *olen += put_utf8(out + *olen, cp);
    return NULL;
}

static void lex_string(struct ck__cel_lexer *lx, struct ck__cel_token *t, size_t start, bool raw,
                       bool bytes)
{
    const char *s = lx->src;
    size_t i = lx->pos;
    char q = s[i];
    bool triple = i + 2 < lx->len && s[i + 1] == q && s[i + 2] == q;
    i += triple ? 3 : 1;
    size_t body = i;
    /* find the end first: the decoded text is never longer than the source */
    size_t end = i;
    for (;;) {
        if (end >= lx->len) {
            set_error(t, start, "unterminated string literal");
            return;
        }
        char c = s[end];
        if (!triple && (c == '\n' || c == '\r')) {
            set_error(t, start, "newline in a quoted string literal");
            return;
        }
        if (c == '\\' && !raw) {
            end += 2;
            continue;
        }
        if (c == q && (!triple || (end + 2 < lx->len && s[end + 1] == q && s[end + 2] == q)))
            break;
        end++;
    }
    char *out = ck__cel_alloc(lx->arena, end - body + 1);
    if (!out) {
        set_error(t, start, "out of memory");
        return;
    }
    size_t olen = 0;
    for (i = body; i < end;) {
        if (s[i] == '\\' && !raw) {
            size_t at = i;
            const char *why = unescape(s, end, &i, bytes, out, &olen);
            if (why) {
                set_error(t, at, why);
                return;
            }
        } else {
            out[olen++] = s[i++];
        }
    }
    out[olen] = '\0';
    if (!bytes && !ck__cel_utf8_valid(out, olen)) {
        set_error(t, start, "invalid UTF-8 in a string literal");
        return;
    }
    t->kind = bytes ? T_BYTES : T_STRING;
    t->s = out;
    t->slen = olen;
    lx->pos = end + (triple ? 3 : 1);
    t->len = lx->pos - start;
}

static void lex_number(struct ck__cel_lexer *lx, struct ck__cel_token *t)
{
    const char *s = lx->src;
    size_t i = lx->pos, start = i;
    if (s[i] == '0' && i + 1 < lx->len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        uint64_t v = 0;
        bool over = false;
        size_t d0 = i;
        while (i < lx->len && hex_value((unsigned char)s[i]) >= 0) {
            if (v >> 60)
                over = true;
            v = v * 16 + (uint64_t)hex_value((unsigned char)s[i]);
            i++;
        }
        if (i == d0) {
            set_error(t, start, "invalid hex literal");
            return;
        }
        t->u = v;
        t->kind = T_INT;
        if (i < lx->len && (s[i] == 'u' || s[i] == 'U')) {
            t->kind = T_UINT;
            i++;
        } else if (v > INT64_MAX) {
            t->int_overflow = true;
        }
        if (over) {
            set_error(t, start, "integer literal out of range");
            return;
        }
        lx->pos = i;
        t->len = i - start;
        return;
    }
    while (i < lx->len && is_digit(s[i]))
        i++;
    bool is_float = false;
    if (i + 1 < lx->len && s[i] == '.' && is_digit(s[i + 1])) {
        is_float = true;
        i++;
        while (i < lx->len && is_digit(s[i]))
            i++;
    }
    if (i < lx->len && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < lx->len && (s[j] == '+' || s[j] == '-'))
            j++;
        if (j < lx->len && is_digit(s[j])) {
            is_float = true;
            i = j;
            while (i < lx->len && is_digit(s[i]))
                i++;
        }
    }
    char buf[400];
    size_t n = i - start;
    if (n >= sizeof(buf)) {
        set_error(t, start, "number literal too long");
        return;
    }
    memcpy(buf, s + start, n);
    buf[n] = '\0';
    if (is_float) {
        t->kind = T_DOUBLE;
        t->d = strtod(buf, NULL);
    } else {
        errno = 0;
        t->u = strtoull(buf, NULL, 10);
        if (errno == ERANGE) {
            set_error(t, start, "integer literal out of range");
            return;
        }
        t->kind = T_INT;
        if (i < lx->len && (s[i] == 'u' || s[i] == 'U')) {
            t->kind = T_UINT;
            i++;
        } else if (t->u > INT64_MAX) {
            t->int_overflow = true;
        }
    }
    lx->pos = i;
    t->len = i - start;
}

static const char *const reserved[] = {
    "as",  "break", "const",   "continue",  "else",   "for", "function", "if",    "import",
    "let", "loop",  "package", "namespace", "return", "var", "void",     "while",
};

void ck__cel_lex(struct ck__cel_lexer *lx, struct ck__cel_token *t)
{
    const char *s = lx->src;
    memset(t, 0, sizeof(*t));
    for (;;) {
        while (lx->pos < lx->len && strchr(" \t\n\f\r", s[lx->pos]) && s[lx->pos])
            lx->pos++;
        if (lx->pos + 1 < lx->len && s[lx->pos] == '/' && s[lx->pos + 1] == '/') {
            while (lx->pos < lx->len && s[lx->pos] != '\n')
                lx->pos++;
            continue;
        }
        break;
    }
    size_t start = lx->pos;
    t->pos = start;
    if (start >= lx->len) {
        t->kind = T_EOF;
        return;
    }
    char c = s[start];
    char c1 = start + 1 < lx->len ? s[start + 1] : '\0';
    if (is_digit(c) || (c == '.' && is_digit(c1))) {
        lex_number(lx, t);
        return;
    }
    if (c == '"' || c == '\'') {
        lex_string(lx, t, start, false, false);
        return;
    }
    if (is_ident_start(c)) {
        /* string prefixes: r, b, and both in either order */
        bool raw = false, bytes = false;
        size_t i = start;
        for (int k = 0; k < 2 && i < lx->len; k++) {
            char p = s[i];
            if ((p == 'r' || p == 'R') && !raw)
                raw = true;
            else if ((p == 'b' || p == 'B') && !bytes)
                bytes = true;
            else
                break;
            i++;
            if (i < lx->len && (s[i] == '"' || s[i] == '\'')) {
                lx->pos = i;
                lex_string(lx, t, start, raw, bytes);
                return;
            }
        }
        i = start;
        while (i < lx->len && (is_ident_start(s[i]) || is_digit(s[i])))
            i++;
        size_t n = i - start;
        lx->pos = i;
        t->len = n;
        t->kind = T_IDENT;
        if (n == 4 && !memcmp(s + start, "true", 4))
            t->kind = T_TRUE;
        else if (n == 5 && !memcmp(s + start, "false", 5))
            t->kind = T_FALSE;
        else if (n == 4 && !memcmp(s + start, "null", 4))
            t->kind = T_NULL;
        else if (n == 2 && !memcmp(s + start, "in", 2))
            t->kind = T_IN;
        for (size_t r = 0; r < sizeof(reserved) / sizeof(reserved[0]); r++)
            if (strlen(reserved[r]) == n && !memcmp(reserved[r], s + start, n))
                t->reserved = true;
        return;
    }
    static const struct {
        const char *text;
        enum ck__cel_tok kind;
    } ops[] = {
        {"==", T_EQ},      {"!=", T_NE},    {"<=", T_LE},    {">=", T_GE},      {"&&", T_AND},
        {"||", T_OR},      {"(", T_LPAREN}, {")", T_RPAREN}, {"[", T_LBRACKET}, {"]", T_RBRACKET},
        {"{", T_LBRACE},   {"}", T_RBRACE}, {".", T_DOT},    {",", T_COMMA},    {":", T_COLON},
        {"?", T_QUESTION}, {"+", T_PLUS},   {"-", T_MINUS},  {"*", T_STAR},     {"/", T_SLASH},
        {"%", T_PERCENT},  {"!", T_NOT},    {"<", T_LT},     {">", T_GT},
    };
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        size_t n = strlen(ops[k].text);
        if (start + n <= lx->len && !memcmp(s + start, ops[k].text, n)) {
            t->kind = ops[k].kind;
            t->len = n;
            lx->pos = start + n;
            return;
        }
    }
    set_error(t, start, "unexpected character");
}
