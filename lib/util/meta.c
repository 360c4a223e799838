/*
 * meta.c - reading an object's metadata fields (ObjectMeta getters, as client-go's
 * meta.Accessor offers them), for the libraries that handle objects as JSON.
 *
 * Threading: pure functions over borrowed jansson values.
 */
#include "ckube/internal/util.h"

const char *ck__meta_str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
}
