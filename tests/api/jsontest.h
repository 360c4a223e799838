/*
 * jsontest.h - what the API tests share for JSON fixtures: parse a literal
 * or fail the test with the parser's message.
 */
#ifndef CKUBE_TESTS_JSONTEST_H
#define CKUBE_TESTS_JSONTEST_H

#include <jansson.h>

/* The JSON value of text (any value; a new reference); fails the running test when malformed. */
static inline json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    return j;
}

#endif /* CKUBE_TESTS_JSONTEST_H */
