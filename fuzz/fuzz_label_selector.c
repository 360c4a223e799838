/*
 * fuzz_label_selector.c - libFuzzer target for the label selector parser.
 *
 * Any input must parse or fail cleanly; a parsed selector's canonical string
 * must parse again to the same string (the round trip the API relies on when
 * it renders a Deployment's selector for kubectl), and matching must not crash.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = strndup((const char *)data, size);
    if (!text)
        return 0;
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    if (ck_label_selector_parse(text, &s, &err) == 0) {
        char *str = ck_label_selector_string(s);
        struct ck_label_selector *again = NULL;
        if (str && ck_label_selector_parse(str, &again, &err) != 0)
            abort(); /* the canonical form must parse */
        char *str2 = again ? ck_label_selector_string(again) : NULL;
        if (str && str2 && strcmp(str, str2) != 0)
            abort(); /* and be stable */
        json_t *labels = json_pack("{s:s, s:s}", "app", "web", "n", "7");
        (void)ck_label_selector_matches(s, labels);
        json_decref(labels);
        free(str2);
        free(str);
        ck_label_selector_free(again);
        ck_label_selector_free(s);
    }
    free(text);
    return 0;
}
