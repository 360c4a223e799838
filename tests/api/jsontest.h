/*
 * jsontest.h - what the API tests share for JSON fixtures: parse a literal
 * or fail the test with the parser's message; write a literal with ' for "
 * to keep it readable.
 */
#ifndef CKUBE_TESTS_JSONTEST_H
#define CKUBE_TESTS_JSONTEST_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The JSON value of text (any value; a new reference); fails the running test when malformed. */
static inline json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    return j;
}

/* text with each ' turned into " (a new string to free); fails the running test on no memory. */
static inline char *swap_quotes(const char *text)
{
    char *out = strdup(text);
    assert_non_null(out);
    for (char *c = out; *c; c++)
        if (*c == '\'')
            *c = '"';
    return out;
}

#endif /* CKUBE_TESTS_JSONTEST_H */
