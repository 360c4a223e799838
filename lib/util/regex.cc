/*
 * regex.cc - Go's regular expressions (package regexp, RE2 syntax) for C, over RE2.
 *
 * Kubernetes compiles a schema's `pattern` and CEL's matches() with Go's regexp:
 * RE2 syntax, leftmost-first semantics, matching in time linear in the text. Go's
 * package is a port of RE2, so RE2's C++ library (Debian's libre2) with Go's
 * settings gives the same language: UTF-8, Perl-like syntax (not POSIX), leftmost
 * first, no logging. Where the two parsers still differ this file makes RE2 answer
 * as Go does, before RE2 sees the pattern:
 *
 * - `\C` (any byte) is RE2's alone: Go refuses it as an invalid escape;
 * - `(?<name>re)` is Go's (since Go 1.22) and not this RE2's: it is rewritten to the
 *   `(?P<name>re)` both know;
 * - a capture name must be ASCII letters, digits and _ in Go; RE2 takes more;
 * - a repeat count past 10^8 ({1,9876543210}) is literal text to RE2: Go refuses
 *   every count past 1,000, so does this file;
 * - Go refuses nesting 1,000 deep; RE2 takes it, and takes thousands of Unicode
 *   classes (\pL) at a millisecond and 50 KiB of parsing each before its memory
 *   budget refuses the program: both are refused first here;
 * - RE2's error codes are printed with Go's words, as Go's regexp.Compile error reads:
 *   error parsing regexp: missing closing ]: `[a`
 *
 * What remains different is written in docs/differences.md (chiefly the size at
 * which a huge expression is refused: RE2's memory budget against Go's count).
 *
 * Allocation: RE2 allocates with operator new; std::bad_alloc is caught at this C
 * boundary and answered CK_ENOMEM. The wrapper struct and message use ck__malloc, so
 * the allocation-failure hook reaches them.
 *
 * Threading: a compiled expression is immutable to its users; RE2 makes concurrent
 * searches on one RE2 object safe (its lazily built DFA is guarded inside RE2).
 *
 * Mirrors go/src/regexp/syntax (parse.go: the error texts, the escapes it accepts).
 */
#include <ctype.h>
#include <new>
#include <re2/re2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>

extern "C" {
#include "ckube/internal/util.h"
#include "ckube/util.h"
}

/*
 * RE2's memory budget for one expression (program plus DFA cache): RE2's default.
 * Go refuses an expression whose program would pass about 3.3 million instructions;
 * RE2 counts UTF-8 byte ranges where Go counts runes, so a big Unicode expression
 * Go takes may be too large here (\pL{1000}: docs/differences.md). A larger budget
 * would take it, at about a second of CPU and tens of MiB to compile; this one
 * refuses it in a third of that, and bounds what each cached pattern holds.
 */
static const int64_t REGEX_MAX_MEM = 8 << 20;

struct ck__regex {
    re2::RE2 *re;
};

/* Go's ErrorCode strings (regexp/syntax/parse.go) for RE2's codes. */
static const char *go_error_text(re2::RE2::ErrorCode code)
{
    switch (code) {
    case re2::RE2::ErrorBadEscape:
        return "invalid escape sequence";
    case re2::RE2::ErrorBadCharClass:
        return "invalid character class";
    case re2::RE2::ErrorBadCharRange:
        return "invalid character class range";
    case re2::RE2::ErrorMissingBracket:
        return "missing closing ]";
    case re2::RE2::ErrorMissingParen:
        return "missing closing )";
    case re2::RE2::ErrorUnexpectedParen:
        return "unexpected )";
    case re2::RE2::ErrorTrailingBackslash:
        return "trailing backslash at end of expression";
    case re2::RE2::ErrorRepeatArgument:
        return "missing argument to repetition operator";
    case re2::RE2::ErrorRepeatSize:
        return "invalid repeat count";
    case re2::RE2::ErrorRepeatOp:
        return "invalid nested repetition operator";
    case re2::RE2::ErrorBadPerlOp:
        return "invalid or unsupported Perl syntax";
    case re2::RE2::ErrorBadUTF8:
        return "invalid UTF-8";
    case re2::RE2::ErrorBadNamedCapture:
        return "invalid named capture";
    case re2::RE2::ErrorPatternTooLarge:
        return "expression too large";
    default:
        return "regexp/syntax: internal error";
    }
}

/* *ret_error = Go's message for code and arg (NULL when memory runs out); returns CK_EINVAL. */
static int fail(char **ret_error, const char *what, const char *arg, size_t arg_len)
{
    if (ret_error) {
        static const char head[] = "error parsing regexp: ";
        size_t n = sizeof(head) - 1 + strlen(what) + 3 + arg_len + 2;
        char *msg = (char *)ck__malloc(n);
        if (msg)
            snprintf(msg, n, "%s%s: `%.*s`", head, what, (int)arg_len, arg);
        *ret_error = msg;
    }
    return CK_EINVAL;
}

/*
 * Go's limits that RE2 lacks: an expression nesting deeper than this is refused
 * ("expression nests too deeply"; Go measures its parse tree's height, here the
 * parentheses are counted, which agrees on Go's own test cases). Unicode classes
 * (\pL ...) cost RE2 about a millisecond and 50 KiB each to parse: past this many
 * the expression is "too large" before RE2 sees it (RE2 would refuse so many of the
 * common ones anyway, slowly, for its memory budget).
 */
#define REGEX_MAX_DEPTH         1000
#define REGEX_MAX_UNICODE_CLASS 1000
#define REGEX_MAX_REPEAT        1000

/* What go_only() found that Go refuses: the message words and the fragment. */
struct go_refusal {
    const char *what; /* NULL: nothing */
    size_t at, len;   /* the fragment of the pattern to quote */
    bool too_large;
};

/*
 * Go's parseInt: decimal digits without a leading zero; *ret is -1 past 10^8.
 * Returns the end, or NULL when there is no number there.
 */
static const char *go_int(const char *p, const char *end, long *ret)
{
    if (p == end || *p < '0' || *p > '9' ||
        (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9'))
        return NULL;
    long n = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        n = n < 0 || n >= 100000000 ? -1 : n * 10 + (*p - '0');
    *ret = n;
    return p;
}

/* The length of a {n}, {n,} or {n,m} at p with a count over Go's limit, else 0. */
static size_t oversized_repeat(const char *p, const char *end)
{
    long min = 0, max = -2;
    const char *q = go_int(p + 1, end, &min);
    if (!q || q == end)
        return 0;
    if (*q == ',') {
        q++;
        if (q < end && *q != '}') {
            q = go_int(q, end, &max);
            if (!q || q == end)
                return 0;
        }
    }
    if (q == end || *q != '}')
        return 0;
    bool over = min < 0 || min > REGEX_MAX_REPEAT || max == -1 || max > REGEX_MAX_REPEAT;
    return over ? (size_t)(q + 1 - p) : 0;
}

/*
 * Walks pattern as Go's parser reads it (escapes, \Q...\E, classes) and copies it to
 * *out with Go's `(?<name>` spelled `(?P<name>`. Fills *no with the first thing Go
 * refuses and RE2 would take or choke on: a `\C` escape, a repeat count past 1000
 * that RE2 reads as literal text, nesting past Go's depth, too many Unicode classes.
 * Anything else malformed is copied as it is, for RE2 to refuse with its own error.
 */
static void go_only(const char *p, size_t len, std::string *out, struct go_refusal *no)
{
    bool in_class = false;
    size_t i = 0, depth = 0, unicode_classes = 0;
    no->what = NULL;
    while (i < len) {
        char c = p[i];
        if (c == '\\' && i + 1 < len) {
            char e = p[i + 1];
            if (e == 'C') {
                *no = (struct go_refusal){"invalid escape sequence", i, 2, false};
                return;
            }
            if ((e == 'p' || e == 'P') && ++unicode_classes > REGEX_MAX_UNICODE_CLASS) {
                *no = (struct go_refusal){"expression too large", 0, len, true};
                return;
            }
            if (e == 'Q' && !in_class) { /* literal text up to \E or the end */
                const char *end = NULL;
                for (size_t j = i + 2; j + 1 < len; j++)
                    if (p[j] == '\\' && p[j + 1] == 'E') {
                        end = p + j + 2;
                        break;
                    }
                size_t stop = end ? (size_t)(end - p) : len;
                out->append(p + i, stop - i);
                i = stop;
                continue;
            }
            size_t stop = i + 2;
            if ((e == 'x' || e == 'p' || e == 'P') && stop < len && p[stop] == '{') {
                /* \x{10FFFF}, \p{Greek}: the braces are not a repeat */
                const char *close = (const char *)memchr(p + stop, '}', len - stop);
                stop = close ? (size_t)(close - p) + 1 : len;
            }
            out->append(p + i, stop - i);
            i = stop;
            continue;
        }
        if (in_class) {
            if (c == '[' && i + 1 < len && p[i + 1] == ':') { /* [:alpha:] */
                const char *end = (const char *)memmem(p + i + 2, len - i - 2, ":]", 2);
                if (end) {
                    size_t stop = (size_t)(end - p) + 2;
                    out->append(p + i, stop - i);
                    i = stop;
                    continue;
                }
            }
            if (c == ']')
                in_class = false;
            out->push_back(c);
            i++;
            continue;
        }
        if (c == '[') {
            in_class = true;
            out->push_back(c);
            i++;
            if (i < len && p[i] == '^')
                out->push_back(p[i++]);
            if (i < len && p[i] == ']') /* a ] first in a class is literal */
                out->push_back(p[i++]);
            continue;
        }
        if (c == '{') {
            size_t n = oversized_repeat(p + i, p + len);
            if (n) {
                *no = (struct go_refusal){"invalid repeat count", i, n, false};
                return;
            }
        }
        if (c == '(' && ++depth >= REGEX_MAX_DEPTH) {
            *no = (struct go_refusal){"expression nests too deeply", 0, len, false};
            return;
        }
        if (c == ')' && depth > 0)
            depth--;
        size_t name_at = 0;
        if (c == '(' && i + 3 < len && p[i + 1] == '?')
            name_at = p[i + 2] == '<' ? i + 3 : p[i + 2] == 'P' && p[i + 3] == '<' ? i + 4 : 0;
        if (name_at) { /* Go's capture names are ASCII word characters (RE2 takes more) */
            const char *gt = (const char *)memchr(p + name_at, '>', len - name_at);
            for (const char *n = p + name_at; gt && n < gt; n++)
                if (!isalnum((unsigned char)*n) && *n != '_') {
                    *no = (struct go_refusal){"invalid named capture", i,
                                              (size_t)(gt + 1 - (p + i)), false};
                    return;
                }
        }
        if (c == '(' && i + 3 < len && p[i + 1] == '?' && p[i + 2] == '<') {
            /* Go reads even (?<=x) as a (badly) named group: so does (?P<=x) */
            out->append("(?P<");
            i += 3;
            continue;
        }
        out->push_back(c);
        i++;
    }
}

extern "C" int ck__regex_compile(const char *pattern, size_t len, struct ck__regex **ret_re,
                                 char **ret_error)
{
    if (ret_error)
        *ret_error = NULL;
    struct ck__regex *r = NULL;
    try {
        std::string go;
        struct go_refusal no;
        go.reserve(len + 8);
        go_only(pattern, len, &go, &no);
        if (no.what) {
            int code = fail(ret_error, no.what, pattern + no.at, no.len);
            return no.too_large ? CK__REGEX_TOO_LARGE : code;
        }

        re2::RE2::Options opt;
        opt.set_encoding(re2::RE2::Options::EncodingUTF8);
        opt.set_posix_syntax(false); /* Perl classes, \b, non-greedy, flags: Go's syntax */
        opt.set_longest_match(false);
        opt.set_log_errors(false);
        opt.set_max_mem(REGEX_MAX_MEM);
        r = (struct ck__regex *)ck__malloc(sizeof(*r));
        if (!r)
            return CK_ENOMEM;
        r->re = NULL;
        r->re = new re2::RE2(re2::StringPiece(go.data(), go.size()), opt);
        if (!r->re->ok()) {
            std::string arg = r->re->error_arg();
            if (go.size() != len && !memmem(pattern, len, "(?P<", 4)) /* quote what Go read */
                for (size_t at; (at = arg.find("(?P<")) != std::string::npos;)
                    arg.erase(at + 2, 1);
            int code = fail(ret_error, go_error_text(r->re->error_code()), arg.data(), arg.size());
            if (r->re->error_code() == re2::RE2::ErrorPatternTooLarge) {
                if (ret_error && *ret_error) { /* RE2 names no fragment: Go names the expression */
                    free(*ret_error);
                    fail(ret_error, "expression too large", pattern, len);
                }
                code = CK__REGEX_TOO_LARGE;
            }
            delete r->re;
            free(r);
            return code;
        }
        *ret_re = r;
        return 0;
    } catch (const std::bad_alloc &) {
        if (r)
            delete r->re; /* NULL when new itself failed */
        free(r);
        return CK_ENOMEM;
    }
}

extern "C" int ck__regex_search(const struct ck__regex *re, const char *text, size_t len)
{
    try {
        return re2::RE2::PartialMatch(re2::StringPiece(text, len), *re->re) ? 1 : 0;
    } catch (const std::bad_alloc &) {
        return CK_ENOMEM;
    }
}

extern "C" int ck__regex_find(const struct ck__regex *re, const char *text, size_t len, size_t from,
                              size_t *ret_start, size_t *ret_end)
{
    try {
        re2::StringPiece whole(text, len), match;
        if (from > len || !re->re->Match(whole, from, len, re2::RE2::UNANCHORED, &match, 1))
            return 0;
        *ret_start = (size_t)(match.data() - text);
        *ret_end = *ret_start + match.size();
        return 1;
    } catch (const std::bad_alloc &) {
        return CK_ENOMEM;
    }
}

extern "C" struct ck__regex *ck__regex_free(struct ck__regex *re)
{
    if (re) {
        delete re->re;
        free(re);
    }
    return NULL;
}
