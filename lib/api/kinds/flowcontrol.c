/*
 * flowcontrol.c - what the two kinds of flowcontrol.apiserver.k8s.io/v1
 * (flowschema.c, prioritylevelconfiguration.c) share: the bootstrap
 * configuration kube-apiserver keeps present (lib/api/flowcontrol/bootstrap.json,
 * k8s.io/apiserver's pkg/apis/flowcontrol/bootstrap/default.go as data), the
 * rule that a mandatory object's spec is the fixed one (pkg/apis/flowcontrol/
 * validation: ValidateIfMandatory...), and the status conditions' rules.
 *
 * Threading: the bootstrap document is parsed once (pthread_once) and never
 * changed after; everything else is pure.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

extern const char *const ck__apf_bootstrap_documents[];

static pthread_once_t once = PTHREAD_ONCE_INIT;
static json_t *bootstrap; /* read only once parsed; NULL when out of memory */

static void parse(void)
{
    const char *text = ck__apf_bootstrap_documents[0];
    if (ck_json_loadb(text, strlen(text), 0, &bootstrap, NULL) < 0)
        bootstrap = NULL;
}

/* The parsed document, borrowed for the life of the process; NULL when out of memory. */
static const json_t *document(void)
{
    pthread_once(&once, parse);
    return bootstrap;
}

json_t *ck_flowcontrol_bootstrap(void)
{
    const json_t *doc = document();
    return doc ? ck__json_copy(doc) : NULL;
}

const json_t *ck__apf_mandatory(const char *collection, const char *name)
{
    const json_t *list = json_object_get(json_object_get(document(), "mandatory"), collection);
    size_t i;
    const json_t *obj;
    json_array_foreach(list, i, obj)
    {
        const char *n = ck__str_at(obj, "metadata.name");
        if (n && name && strcmp(n, name) == 0)
            return obj;
    }
    return NULL;
}

/*
 * Whether v is Go's zero value once decoded into a non-pointer field: false,
 * 0, "", null, an empty list or map (apimachinery's semantic equality takes
 * a nil and an empty slice for equal).
 */
static bool is_zero(const json_t *v)
{
    return !v || json_is_null(v) || json_is_false(v) ||
           (json_is_integer(v) && json_integer_value(v) == 0) ||
           (json_is_string(v) && !*json_string_value(v)) ||
           (json_is_array(v) && json_array_size(v) == 0) ||
           (json_is_object(v) && json_object_size(v) == 0);
}

bool ck__apf_spec_equal(const json_t *a, const json_t *b)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)a, key, v)
        {
            if (!ck__apf_spec_equal(v, json_object_get(b, key)))
                return false;
        }
        json_object_foreach((json_t *)b, key, v)
        {
            if (!json_object_get(a, key) && !is_zero(v))
                return false;
        }
        return true;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!ck__apf_spec_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (is_zero(a) || is_zero(b))
        return is_zero(a) && is_zero(b);
    return json_equal(a, b);
}

void ck__apf_validate_mandatory(const json_t *obj, const char *collection, const json_t *fixed,
                                struct ck_field_errors *errs)
{
    const char *name = ck__str_at(obj, "metadata.name");
    const json_t *mandatory = ck__apf_mandatory(collection, name);
    if (!mandatory)
        return;
    const json_t *spec = json_object_get(obj, "spec");
    if (ck__apf_spec_equal(spec, fixed ? fixed : json_object_get(mandatory, "spec")))
        return;
    char *text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    ck_field_errors_add(errs, CK_FIELD_INVALID, "spec", text ? text : "null", false,
                        "spec of '%s' must equal the fixed value", name);
    free(text);
}

void ck__apf_validate_conditions(const json_t *obj, struct ck_field_errors *errs)
{
    const json_t *conditions = ck__json_path(obj, "status.conditions");
    size_t i;
    const json_t *c;
    char path[64];
    json_array_foreach(conditions, i, c)
    {
        const char *type = ck__str_at(c, "type");
        snprintf(path, sizeof(path), "status.conditions[%zu].type", i);
        for (size_t j = 0; j < i && type && *type; j++) {
            const char *earlier = ck__str_at(json_array_get(conditions, j), "type");
            if (earlier && strcmp(earlier, type) == 0) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, path, type, true, NULL);
                break;
            }
        }
        if (!type || !*type)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, "must not be empty");
    }
}

int ck__apf_reset_status(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

const struct ck_subresource ck__apf_subresources[1] = {
    CK__STATUS_SUBRESOURCE,
};
