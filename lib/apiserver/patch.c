/*
 * patch.c - PATCH of objects and of their status and scale subresources,
 * and the autoscaling/v1 Scale view of Deployments and ReplicaSets
 * (kube-api-contract sections 10.3, 10.4 and 12.2).
 *
 * A patch is a mutation for ck__registry_update(): applied to the current
 * object (or to its Scale) on every optimistic attempt, so a patch that
 * races another writer is simply applied again to the newer state. The
 * patched document goes back through the request decoder, so a patch can
 * neither smuggle in values of the wrong type nor unknown fields (those
 * follow fieldValidation, as in Kubernetes). A metadata.resourceVersion the
 * patch itself sets is a precondition; the current one the patched document
 * inherits is not.
 *
 * Threading: a struct ck__patch belongs to one request; everything else
 * here is pure.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/internal/util.h"
#include "internal.h"

static const char unsupported_patch[] =
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml";

static const char unsupported_custom_patch[] =
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/*
 * The largest patched object, as JSON: the request body limit, so that a patch
 * cannot store what a PUT could not send (docs/limits.md).
 */
#define MAX_PATCHED_BYTES (3u * 1024 * 1024)

static bool media_is(const char *content_type, const char *want)
{
    size_t n = strlen(want);
    return strncasecmp(content_type, want, n) == 0 &&
           (content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ');
}

int ck__patch_init(struct ck__patch *p, const struct ck_schemas *schemas,
                   const struct ck_kind *kind, const char *content_type, const char *body,
                   size_t len, struct ck_err *reterr)
{
    memset(p, 0, sizeof(*p));
    p->schemas = schemas;
    p->kind = kind;
    if (content_type && media_is(content_type, "application/json-patch+json"))
        p->type = CK__PATCH_JSON;
    else if (content_type && media_is(content_type, "application/merge-patch+json"))
        p->type = CK__PATCH_MERGE;
    else if (content_type && media_is(content_type, "application/strategic-merge-patch+json") &&
             ck_schema_is_strategic(schemas, kind->schema))
        p->type = CK__PATCH_STRATEGIC;
    else if (content_type && media_is(content_type, "application/apply-patch+yaml"))
        return ck__apply_patch_init(p, body, len, reterr);
    else {
        return ck_err_status(reterr, "UnsupportedMediaType", "%s",
                             ck_schema_is_strategic(schemas, kind->schema)
                                 ? unsupported_patch
                                 : unsupported_custom_patch);
    }
    json_error_t jerr;
    p->doc = NULL;
    if (ck_json_loadb(body, len, JSON_DECODE_ANY, &p->doc, &jerr) == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (!p->doc)
        return ck_err_status(reterr, "BadRequest", "error decoding patch: %s", jerr.text);
    if (p->type == CK__PATCH_JSON ? !json_is_array(p->doc) : !json_is_object(p->doc)) {
        ck__patch_release(p);
        return ck_err_status(reterr, "BadRequest", "error decoding patch: %s",
                             p->type == CK__PATCH_JSON
                                 ? "a JSON patch must be an array of operations"
                                 : "a merge patch must be a JSON object");
    }
    return 0;
}

void ck__patch_release(struct ck__patch *p)
{
    json_decref(p->doc);
    ck_warnings_release(&p->warnings);
    memset(p, 0, sizeof(*p));
}

/* 422 `Kind "name" is invalid: patch: Invalid value: ...: why` */
static void patch_invalid(struct ck_err *reterr, const struct ck_kind *kind, const json_t *obj,
                          const char *why)
{
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "patch", NULL, false, "%s", why);
    ck__err_invalid_object(
        reterr, kind, json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
        &errs);
    ck_field_errors_release(&errs);
}

/* Applies the patch to view (described by schema), then decodes the result. */
static json_t *apply(struct ck__patch *p, const json_t *view, const char *schema,
                     struct ck_err *reterr)
{
    json_t *out = NULL;
    struct ck_err err = {0};
    switch (p->type) {
    case CK__PATCH_MERGE:
        out = ck_merge_patch(view, p->doc);
        if (!out)
            ck_err_no_memory(reterr);
        break;
    case CK__PATCH_JSON:
        if (ck_json_patch(view, p->doc, &out, &err) == CK_ENOMEM)
            ck_err_no_memory(reterr);
        else if (!out)
            ck_err_status(reterr, err.reason ? err.reason : "Invalid", "%s", ck_err_message(&err));
        break;
    case CK__PATCH_APPLY: /* ck__patch_mutate() hands it to ck__apply_patch() */
        ck_err_internal(reterr, "apply is not a patch of a view");
        break;
    case CK__PATCH_STRATEGIC:
        if (ck_strategic_merge_patch(p->schemas, schema, view, p->doc, &out, &err) == CK_ENOMEM)
            ck_err_no_memory(reterr);
        else if (!out)
            ck_err_status(reterr, err.reason ? err.reason : "BadRequest", "%s",
                          ck_err_message(&err));
        break;
    }
    ck_err_release(&err);
    if (!out)
        return NULL;
    if (!json_is_object(out)) {
        patch_invalid(reterr, p->kind, view, "the patched document is not an object");
        json_decref(out);
        return NULL;
    }
    ck_warnings_release(&p->warnings); /* only the last attempt's warnings are answered */
    /* jansson counts the bytes it would write, without writing them */
    if (json_dumpb(out, NULL, 0, JSON_COMPACT) > MAX_PATCHED_BYTES) {
        json_decref(out);
        ck_err_status(reterr, "RequestEntityTooLarge", "Request entity too large: limit is %u",
                      MAX_PATCHED_BYTES);
        return NULL;
    }
    /*
     * Decoded as the tree it is (its text, parsed again, would be the same tree). The
     * decoder works in place, and only a merge patch's result is sure to share no
     * value with the patch, which the next attempt applies again: the others are
     * copied first.
     */
    if (p->type != CK__PATCH_MERGE) {
        json_t *copy = ck__json_copy(out);
        json_decref(out);
        if (!(out = copy)) {
            ck_err_no_memory(reterr);
            return NULL;
        }
    }
    json_t *decoded = NULL;
    int r =
        ck_schema_decode_tree(p->schemas, schema, out, p->validation, &decoded, &p->warnings, &err);
    if (r == CK_ENOMEM) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    if (r < 0) {
        patch_invalid(reterr, p->kind, view, err.msg);
        return NULL;
    }
    return decoded;
}

/* The resourceVersion the patched document inherited from view is no precondition. */
static void drop_inherited_version(json_t *patched, const json_t *view)
{
    json_t *meta = json_object_get(patched, "metadata");
    json_t *rv = json_object_get(meta, "resourceVersion");
    if (rv && json_equal(rv, json_object_get(json_object_get(view, "metadata"), "resourceVersion")))
        json_object_del(meta, "resourceVersion");
}

/*
 * The patched object must still be the one the URL names (Kubernetes'
 * checkName, run on every patch): 400 when its name went missing or changed,
 * or its namespace changed. current is the stored object, named by the URL.
 */
static int check_name(const json_t *patched, const json_t *current, struct ck_err *reterr)
{
    const char *url_name =
        json_string_value(json_object_get(json_object_get(current, "metadata"), "name"));
    const char *url_ns =
        json_string_value(json_object_get(json_object_get(current, "metadata"), "namespace"));
    const json_t *meta = json_object_get(patched, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!url_name)
        url_name = "";
    if (!name || !*name)
        return ck_err_status(
            reterr, "BadRequest",
            "the name of the object (%s based on URL) was undeterminable: name must "
            "be provided",
            url_name);
    if (strcmp(name, url_name) != 0)
        return ck_err_status(reterr, "BadRequest",
                             "the name of the object (%s) does not match the name on the URL (%s)",
                             name, url_name);
    if (url_ns && *url_ns && ns && *ns && strcmp(ns, url_ns) != 0)
        return ck_err_status(reterr, "BadRequest",
                             "the namespace of the object (%s) does not match the namespace on the "
                             "request (%s)",
                             ns, url_ns);
    return 0;
}

/*
 * What of current a status write can change, for a merge patch to apply to: its
 * apiVersion, kind, metadata and status (borrowed), without the spec and the rest,
 * which the write takes from the stored object whatever the patch says of them. A
 * merge patch gives the same metadata and status on either, and its other members
 * are decoded (and refused) alike. NULL when out of memory.
 */
static json_t *status_view(const json_t *current)
{
    static const char *const kept[] = {"apiVersion", "kind", "metadata", "status"};
    json_t *view = json_object();
    for (size_t i = 0; view && i < sizeof(kept) / sizeof(kept[0]); i++) {
        json_t *v = json_object_get(current, kept[i]);
        if (v && json_object_set(view, kept[i], v) < 0)
            view = (json_decref(view), NULL);
    }
    return view;
}

json_t *ck__patch_mutate(const json_t *current, void *arg, struct ck_err *reterr)
{
    struct ck__patch *p = arg;
    if (p->type == CK__PATCH_APPLY) {
        json_t *out = ck__apply_patch(p, current, reterr);
        if (out && current)
            drop_inherited_version(out, current);
        return out;
    }
    if (!p->scale) {
        /* a status write's merge patch needs only what the write keeps of its result */
        json_t *target = p->status_only && p->type == CK__PATCH_MERGE
                             ? status_view(current)
                             : json_incref((json_t *)current);
        if (!target) {
            ck_err_no_memory(reterr);
            return NULL;
        }
        json_t *out = apply(p, target, p->kind->schema, reterr);
        json_decref(target);
        if (out && check_name(out, current, reterr) < 0)
            out = (json_decref(out), NULL);
        if (out)
            drop_inherited_version(out, current);
        return out;
    }
    /* the Scale's schema, as the kind's scale subresource names it */
    const struct ck_subresource *sub = ck_kind_subresource_part(p->kind, CK_SUBRESOURCE_SCALE);
    json_t *view = sub ? ck__scale_of(p->kind, current) : NULL;
    json_t *patched = view ? apply(p, view, sub->schema, reterr) : NULL;
    json_t *out = NULL;
    if (patched) {
        drop_inherited_version(patched, view);
        out = ck__scale_apply(p->kind, current, patched, reterr);
    } else if (!sub) {
        ck_err_internal(reterr, "%s has no scale subresource", p->kind->resource);
    } else if (!view) {
        ck_err_no_memory(reterr);
    }
    json_decref(patched);
    json_decref(view);
    return out;
}

/* ---- scale -------------------------------------------------------------- */

/* A CRD's JSONPath of a scale number (".spec.replicas") as a dotted path; NULL stays NULL. */
static const char *dotted(const char *json_path)
{
    return json_path && json_path[0] == '.' ? json_path + 1 : json_path;
}

/* The value at a dotted path of obj, or NULL. Borrowed. */
static json_t *value_at(const json_t *obj, const char *path)
{
    const json_t *v = obj;
    while (v && path && *path) {
        size_t n = strcspn(path, ".");
        v = json_object_getn(v, path, n);
        path += n + (path[n] == '.');
    }
    return (json_t *)v;
}

/*
 * Sets the member at a dotted path of obj to value (taken), making the objects
 * on the way. 0; -1 out of memory; -2 when the path cannot name a member (an
 * empty segment, or a value on the way that is not an object).
 */
static int set_at(json_t *obj, const char *path, json_t *value)
{
    json_t *v = obj;
    for (;;) {
        size_t n = strcspn(path, ".");
        if (!json_is_object(v) || n == 0) {
            json_decref(value);
            return -2;
        }
        if (!path[n])
            return json_object_setn_new(v, path, n, value);
        json_t *next = json_object_getn(v, path, n);
        if (!json_is_object(next)) {
            next = json_object();
            if (json_object_setn_new(v, path, n, next) < 0) {
                json_decref(value);
                return -1;
            }
        }
        v = next;
        path += n + 1;
    }
}

json_t *ck__scale_of(const struct ck_kind *kind, const json_t *obj)
{
    const struct ck_subresource *sub = ck_kind_subresource_part(kind, CK_SUBRESOURCE_SCALE);
    const json_t *meta = json_object_get(obj, "metadata");
    json_t *scale_meta = json_object();
    int failed = 0; /* out of memory: NULL, never a Scale with members missing */
    static const char *const copied[] = {"name", "namespace", "uid", "resourceVersion",
                                         "creationTimestamp"};
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
        json_t *v = json_object_get(meta, copied[i]);
        if (v)
            failed |= json_object_set(scale_meta, copied[i], v);
    }
    const json_t *spec = json_object_get(obj, "spec");
    bool custom = sub && sub->spec_replicas_path; /* a custom resource's paths */
    json_int_t replicas = json_integer_value(custom ? value_at(obj, dotted(sub->spec_replicas_path))
                                                    : json_object_get(spec, "replicas"));
    json_int_t current =
        json_integer_value(custom ? value_at(obj, dotted(sub->status_replicas_path))
                                  : json_object_get(json_object_get(obj, "status"), "replicas"));
    json_t *status = json_pack("{s:I}", "replicas", current);
    struct ck_label_selector *sel = NULL;
    struct ck_err err = {0};
    int r = 0;
    if (custom) {
        /* the selector is already a string there, as an HPA reads it */
        const char *text = sub->label_selector_path
                               ? json_string_value(value_at(obj, dotted(sub->label_selector_path)))
                               : NULL;
        if (text && *text && json_object_set_new(status, "selector", json_string(text)) < 0)
            failed = -1;
    } else {
        r = ck_label_selector_from_object(json_object_get(spec, "selector"), &sel, &err);
    }
    if (!custom && r == 0) {
        char *text = ck_label_selector_string(sel);
        if (!text || (*text && json_object_set_new(status, "selector", json_string(text)) < 0))
            failed = -1;
        free(text);
    }
    ck_label_selector_free(sel);
    ck_err_release(&err);
    if (failed || r == CK_ENOMEM) {
        json_decref(scale_meta);
        json_decref(status);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:o, s:{s:I}, s:o}", "kind", "Scale", "apiVersion",
                     "autoscaling/v1", "metadata", scale_meta, "spec", "replicas", replicas,
                     "status", status);
}

json_t *ck__scale_apply(const struct ck_kind *kind, const json_t *current, const json_t *scale,
                        struct ck_err *reterr)
{
    json_t *next = ck__json_copy(current);
    if (!next) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    json_t *meta = json_object_get(next, "metadata");
    const json_t *scale_meta = json_object_get(scale, "metadata");
    static const char *const preconditions[] = {"resourceVersion", "uid"};
    int failed = 0;
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(scale_meta, preconditions[i]);
        if (v && json_string_length(v))
            failed |= json_object_set(meta, preconditions[i], v);
        else if (i == 0)
            json_object_del(meta, preconditions[i]);
    }
    const struct ck_subresource *sub = ck_kind_subresource_part(kind, CK_SUBRESOURCE_SCALE);
    const char *path =
        sub && sub->spec_replicas_path ? dotted(sub->spec_replicas_path) : "spec.replicas";
    json_t *replicas = json_object_get(json_object_get(scale, "spec"), "replicas");
    if (!failed && set_at(next, path, json_integer(json_integer_value(replicas))) == -2) {
        json_decref(next);
        ck_err_internal(reterr, "the scale subresource's replicas path %s names no field", path);
        return NULL;
    }
    failed |= !json_is_integer(value_at(next, path));
    if (failed) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

json_t *ck__scale_put_mutate(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct ck__scale_put *put = arg;
    return ck__scale_apply(put->kind, current, put->scale, reterr);
}

char *ck__scale_serve(const struct ck_kind *kind, const char *served, size_t len, size_t *ret_len)
{
    json_t *obj = NULL;
    ck_json_loadb(served, len, 0, &obj, NULL);
    json_t *scale = obj ? ck__scale_of(kind, obj) : NULL;
    char *text = ck__json_dumps(scale, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL);
    json_decref(scale);
    json_decref(obj);
    if (text)
        *ret_len = strlen(text);
    return text;
}

/* ---- server-side apply -------------------------------------------------- */

int ck__apply_patch_init(struct ck__patch *p, const char *body, size_t len, struct ck_err *reterr)
{
    p->type = CK__PATCH_APPLY;
    /* JSON (what kubectl sends) through the JSON parser, anything else as YAML */
    if (ck_json_loadb(body, len, 0, &p->doc, NULL) == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    struct ck_err err = {0};
    if (!p->doc && ck__yaml_to_json(body ? body : "", len, &p->doc, &err) < 0) {
        int r = err.code == CK_ENOMEM
                    ? ck_err_no_memory(reterr)
                    : ck_err_status(reterr, "BadRequest", "error decoding YAML: %s", err.msg);
        ck_err_release(&err);
        return r;
    }
    if (!json_is_object(p->doc)) {
        json_decref(p->doc);
        p->doc = NULL;
        return ck_err_status(reterr, "BadRequest", "error decoding YAML: %s",
                             "the body must be a YAML or JSON object");
    }
    return 0;
}

/* The applied configuration decoded against the kind's schema (fieldValidation as asked). */
static json_t *decode_config(struct ck__patch *p, struct ck_err *reterr)
{
    const json_t *meta = json_object_get(p->doc, "metadata");
    if (json_object_get(meta, "managedFields")) {
        ck_err_status(reterr, "BadRequest", "metadata.managedFields must be nil");
        return NULL;
    }
    char *text = ck__json_dumps(p->doc, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL);
    if (!text) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    json_t *decoded = NULL;
    struct ck_err err = {0};
    ck_warnings_release(&p->warnings);
    int r = ck_schema_decode(p->schemas, p->kind->schema, text, strlen(text), p->validation,
                             &decoded, &p->warnings, &err);
    free(text);
    if (r == CK_ENOMEM) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    if (r < 0) {
        ck_err_status(reterr, "BadRequest", "%s", err.msg);
        return NULL;
    }
    const char *kind = json_string_value(json_object_get(decoded, "kind"));
    const char *api_version = json_string_value(json_object_get(decoded, "apiVersion"));
    char want[128];
    snprintf(want, sizeof(want), "%s%s%s", p->kind->group, p->kind->group[0] ? "/" : "",
             p->kind->version);
    if (!kind || !api_version || strcmp(kind, p->kind->kind) != 0 ||
        strcmp(api_version, want) != 0) {
        ck_err_status(reterr, "BadRequest",
                      "unable to decode apply patch: apiVersion and kind must be %s, %s", want,
                      p->kind->kind);
        json_decref(decoded);
        return NULL;
    }
    return decoded;
}

json_t *ck__apply_patch(struct ck__patch *p, const json_t *current, struct ck_err *reterr)
{
    if (p->scale) {
        ck_err_status(reterr, "UnsupportedMediaType",
                      "server-side apply of the scale subresource is not supported");
        return NULL;
    }
    json_t *config = decode_config(p, reterr);
    if (!config)
        return NULL;
    /* the configuration names the object the URL names, as every patch result must */
    const json_t *meta = json_object_get(config, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const json_t *cur_meta = json_object_get(current, "metadata");
    const char *cur_name = json_string_value(json_object_get(cur_meta, "name"));
    const char *cur_ns = json_string_value(json_object_get(cur_meta, "namespace"));
    if (current && name && cur_name && strcmp(name, cur_name) != 0) {
        ck_err_status(reterr, "BadRequest",
                      "the name of the object (%s) does not match the name on the URL (%s)", name,
                      cur_name);
        json_decref(config);
        return NULL;
    }
    if (current && ns && *ns && cur_ns && strcmp(ns, cur_ns) != 0) {
        ck_err_status(reterr, "BadRequest",
                      "the namespace of the provided object does not "
                      "match the namespace sent on the request");
        json_decref(config);
        return NULL;
    }
    json_t *out = NULL;
    int r = ck_apply(p->schemas, p->kind, current, config, &p->who, p->force, &out, reterr);
    json_decref(config);
    if (r < 0)
        return NULL;
    return out;
}
