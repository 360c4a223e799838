/*
 * json.c - reading JSON text into jansson values, whole or not at all.
 *
 * jansson's json_loadb() does not survive running out of memory: 2.14 may
 * call it a syntax error; when growing the buffer that holds a token fails it
 * drops the byte and goes on, returning a value with a string or a number
 * quietly changed (a uid with a character missing); on some error paths it
 * frees a pointer it never allocated, or trips an assert. So:
 *
 * - ck_json_loadb() watches the allocations jansson makes on this thread
 *   (ck__alloc_failures(); the ckube program routes jansson's allocations
 *   through ck__malloc with json_set_alloc_funcs()) and answers CK_ENOMEM,
 *   never a value, when any of them failed;
 * - the allocation-failure tests do not fail jansson's parser's allocations
 *   (the hook is paused around it), since what it does then is jansson's bug,
 *   not ours: a real failure there is the documented limit of jansson 2.14
 *   (docs/dependencies.md). Everything that is built from the parsed value
 *   is tested under failure.
 *
 * The parsing itself is jansson's.
 *
 * Threading: safe on any thread (the failure count is per thread).
 */
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

/* Fills jerr as jansson would for code: the text, then the code in the text's last byte. */
static void set_error(json_error_t *jerr, enum json_error_code code, const char *text)
{
    memset(jerr, 0, sizeof(*jerr));
    jerr->line = -1;
    jerr->column = -1;
    strcpy(jerr->source, "<buffer>");
    strncpy(jerr->text, text, JSON_ERROR_TEXT_LENGTH - 2);
    jerr->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;
}

int ck_json_loadb(const char *text, size_t len, size_t flags, json_t **ret_json, json_error_t *jerr)
{
    json_error_t local;
    if (!jerr)
        jerr = &local;
    if (!text)
        text = "", len = 0;
    unsigned long failures = ck__alloc_failures();
    bool paused = ck__alloc_hook_pause(true);
    json_t *v = json_loadb(text, len, flags, jerr);
    ck__alloc_hook_pause(paused);
    if (ck__alloc_failures() != failures ||
        (!v && json_error_code(jerr) == json_error_out_of_memory)) {
        json_decref(v);
        set_error(jerr, json_error_out_of_memory, "out of memory");
        return CK_ENOMEM;
    }
    if (!v)
        return CK_EINVAL;
    *ret_json = v;
    return 0;
}
