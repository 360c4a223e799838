/*
 * fuzz_protobuf.c - libFuzzer target for the protobuf decoder
 * (lib/api/protobuf.c), which reads what any client sends as
 * application/vnd.kubernetes.protobuf.
 *
 * The first byte picks the message (a few kinds, and the watch event
 * decoder); the rest is the body. A body the decoder takes must encode
 * again, and that encoding must decode to the same JSON (the codec is its
 * own inverse on what it produces, but for the one loss Go's codec has too:
 * same_but_epoch); a body it refuses must come back as a 400 with no value. ASan and UBSan watch
 * every length and shift.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const messages[] = {
    "io.k8s.api.core.v1.Pod",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.core.v1.Namespace",
    "io.k8s.api.core.v1.Node",
    "io.k8s.api.core.v1.Event",
    "io.k8s.api.core.v1.Secret",
    "io.k8s.api.rbac.v1.ClusterRole",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.api.authentication.v1.TokenReview",
    "io.k8s.api.batch.v1.CronJob",
};

/*
 * Whether again is value as the codec gives it back: equal, except that a
 * Time at the Unix epoch may be gone. Go's codec loses it too: a Timestamp
 * of 0 seconds and some nanoseconds decodes (nanoseconds dropped) to
 * 1970-01-01T00:00:00Z, which marshals as an empty Timestamp, the zero Time.
 */
static bool same_but_epoch(const json_t *value, const json_t *again)
{
    if (json_is_object(value) && json_is_object(again)) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)value, key, v)
        {
            const json_t *w = json_object_get(again, key);
            if (w ? !same_but_epoch(v, w)
                  : !(json_is_string(v) &&
                      strcmp(json_string_value(v), "1970-01-01T00:00:00Z") == 0))
                return false;
        }
        json_object_foreach((json_t *)again, key, v)
        {
            if (!json_object_get(value, key))
                return false;
        }
        return true;
    }
    if (json_is_array(value) && json_is_array(again)) {
        if (json_array_size(value) != json_array_size(again))
            return false;
        for (size_t i = 0; i < json_array_size(value); i++)
            if (!same_but_epoch(json_array_get(value, i), json_array_get(again, i)))
                return false;
        return true;
    }
    return json_equal(value, again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *message = messages[data[0] % (sizeof(messages) / sizeof(messages[0]))];
    bool watch = data[0] & 0x80;
    data++;
    size--;
    json_t *obj = NULL;
    struct ck_err err = {0};
    int r = watch ? ck_proto_decode_watch_event(message, data, size, &obj, &err)
                  : ck_proto_decode(message, data, size, &obj, &err);
    if (r < 0) {
        if (obj || (r != CK_ENOMEM && err.http_status != 400))
            abort();
        ck_err_release(&err);
        return 0;
    }
    json_t *value = watch ? json_object_get(obj, "object") : obj;
    char *bytes = NULL;
    size_t len = 0;
    if (ck_proto_encode(message, value, &bytes, &len, &err) < 0)
        abort(); /* what the decoder made, the encoder takes */
    json_t *again = NULL;
    if (ck_proto_decode(message, bytes, len, &again, &err) < 0 || !same_but_epoch(value, again))
        abort();
    json_decref(again);
    free(bytes);
    json_decref(obj);
    ck_err_release(&err);
    return 0;
}
