/*
 * fuzz_object_key.c - arbitrary JSON through the indexer's key function, key split and
 * built-in index functions: bad objects must give clear errors, never crashes, and a key
 * that is made must split back into the object's namespace and name.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!obj)
        return 0;
    char *key = NULL;
    if (ck_meta_namespace_key(obj, &key, NULL) == 0) {
        char *ns = NULL, *name = NULL;
        const json_t *meta = json_object_get(obj, "metadata");
        const char *want_name = json_string_value(json_object_get(meta, "name"));
        /* Names with '/' make keys that do not split: that must be an error, not a crash. */
        if (ck_split_meta_namespace_key(key, &ns, &name, NULL) == 0 && !strchr(want_name, '/')) {
            const char *want_ns = json_string_value(json_object_get(meta, "namespace"));
            if (strcmp(name, want_name) != 0 || strcmp(ns, want_ns ? want_ns : "") != 0)
                abort();
        }
        free(ns);
        free(name);
    }
    free(key);

    struct ck_indexer *ix;
    if (ck_indexer_new(&ix, NULL) == 0) {
        ck_indexer_add_index(ix, CK_INDEX_NAMESPACE, ck_index_by_namespace, NULL, NULL);
        ck_indexer_add_index(ix, CK_INDEX_CONTROLLER_UID, ck_index_by_controller_uid, NULL, NULL);
        if (ck_indexer_add(ix, obj, NULL) == 0 && ck_indexer_delete(ix, obj, NULL) != 0)
            abort();
        ck_indexer_free(ix);
    }
    json_decref(obj);
    return 0;
}
