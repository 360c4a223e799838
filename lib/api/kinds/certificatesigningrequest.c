/*
 * certificatesigningrequest.c - the CertificateSigningRequest kind
 * (certificates.k8s.io/v1): a PKCS#10 request for a named signer, approved
 * or denied through /approval, then signed (or failed) through /status.
 *
 * Mirrors Kubernetes' pkg/registry/certificates/certificates/strategy.go and
 * pkg/apis/certificates/validation (v1's strict options). Cluster-scoped,
 * short name csr. On create the server sets spec.username, uid, groups and
 * extra from the user who asks (prepare_for_create_by; whatever the body
 * said is dropped) and starts with an empty status. The spec never changes
 * afterwards. A write of the object keeps the status; a write of /status
 * keeps the spec and the Approved and Denied conditions (only /approval
 * changes those); a write of /approval changes the conditions alone. Every
 * condition gets lastUpdateTime and lastTransitionTime when it has none (the
 * transition time of the same type and status in the old object, else now).
 *
 * Validation: spec.request must be a "CERTIFICATE REQUEST" PEM block whose
 * signature holds (GnuTLS, through certificates.c); usages are required,
 * known and not repeated; signerName is required, domain/path shaped
 * (kubernetes.io/legacy-unknown is refused, as v1 refuses it);
 * expirationSeconds is at least 600. Conditions need a type and a status,
 * Approved, Denied and Failed are True only and unique, Approved and Denied
 * exclude each other, an update removes none of them, and a certificate once
 * set never changes; status.certificate must be CERTIFICATE PEM blocks.
 * Kubernetes relaxes some of these on update when the stored object already
 * breaks them (objects written through v1beta1); ckube never served v1beta1.
 *
 * The printer shows NAME, AGE, SIGNERNAME, REQUESTOR, REQUESTEDDURATION and
 * CONDITION as kubectl does (Denied or Approved or Pending, then ",Failed"
 * and ",Issued").
 *
 * Threading: the descriptor is static and immutable; the hooks are pure
 * (but for reading the clock to stamp conditions).
 *
 * Tested by tests/api/test_certificates.c and tests/e2e/test_certificates.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/certificates.h"
#include "ckube/internal/util.h"

/* ---- strategy ------------------------------------------------------------------ */

static int prepare_for_create(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (json_is_object(spec)) {
        static const char *const from_user[] = {"username", "uid", "groups", "extra"};
        for (size_t i = 0; i < CK__COUNT(from_user); i++)
            json_object_del(spec, from_user[i]);
    }
    /* users cannot create pre-approved requests */
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

static int prepare_for_create_by(json_t *obj, const json_t *user)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec) || !user)
        return 0;
    static const char *const members[] = {"username", "uid", "groups", "extra"};
    for (size_t i = 0; i < CK__COUNT(members); i++) {
        const json_t *v = json_object_get(user, members[i]);
        bool empty = !v || (json_is_string(v) && !*json_string_value(v)) ||
                     (json_is_array(v) && json_array_size(v) == 0) ||
                     (json_is_object(v) && json_object_size(v) == 0);
        if (!empty && json_object_set_new(spec, members[i], ck__json_copy(v)) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

static int prepare_for_update(json_t *obj, const json_t *old)
{
    const json_t *spec = json_object_get(old, "spec");
    if (!spec) {
        json_object_del(obj, "spec");
        return 0;
    }
    return json_object_set_new(obj, "spec", ck__json_copy(spec)) < 0 ? CK_ENOMEM : 0;
}

/* The conditions array of obj, made when absent; NULL when out of memory. */
static json_t *conditions_of(json_t *obj)
{
    json_t *status = ck__object_at(obj, "status");
    if (!status)
        return NULL;
    json_t *conditions = json_object_get(status, "conditions");
    if (json_is_array(conditions))
        return conditions;
    conditions = json_array();
    return json_object_set_new(status, "conditions", conditions) < 0 ? NULL : conditions;
}

static const json_t *old_conditions(const json_t *old)
{
    return json_object_get(json_object_get(old, "status"), "conditions");
}

static bool condition_is(const json_t *c, const char *type)
{
    const char *t = json_string_value(json_object_get(c, "type"));
    return t && strcmp(t, type) == 0;
}

/* Kubernetes' populateConditionTimestamps. */
static int stamp_conditions(json_t *obj, const json_t *old)
{
    json_t *conditions = json_object_get(json_object_get(obj, "status"), "conditions");
    char now[64];
    ck_rfc3339((long long)time(NULL), now, sizeof(now));
    size_t i, j;
    json_t *c;
    const json_t *o;
    json_array_foreach(conditions, i, c)
    {
        if (!json_is_object(c))
            continue;
        if (!json_is_string(json_object_get(c, "lastUpdateTime")) &&
            json_object_set_new(c, "lastUpdateTime", json_string(now)) < 0)
            return CK_ENOMEM;
        if (json_is_string(json_object_get(c, "lastTransitionTime")))
            continue;
        const json_t *transition = NULL;
        json_array_foreach(old_conditions(old), j, o)
        {
            if (json_equal(json_object_get(o, "type"), json_object_get(c, "type")) &&
                json_equal(json_object_get(o, "status"), json_object_get(c, "status")) &&
                json_is_string(json_object_get(o, "lastTransitionTime"))) {
                transition = json_object_get(o, "lastTransitionTime");
                break;
            }
        }
        if (json_object_set_new(c, "lastTransitionTime",
                                transition ? ck__json_copy(transition) : json_string(now)) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

/* Kubernetes' preserveConditionInstances: obj's conditions of type become old's. */
static int preserve_conditions(json_t *obj, const json_t *old, const char *type)
{
    json_t *conditions = conditions_of(obj);
    if (!conditions)
        return CK_ENOMEM;
    for (size_t i = json_array_size(conditions); i-- > 0;)
        if (condition_is(json_array_get(conditions, i), type))
            json_array_remove(conditions, i);
    size_t i;
    const json_t *o;
    json_array_foreach(old_conditions(old), i, o)
    {
        if (condition_is(o, type) && json_array_append_new(conditions, ck__json_copy(o)) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

/* A write of /status: the spec is kept (by the server) and so are Approved and Denied. */
static int prepare_status(json_t *next, const json_t *old)
{
    if (preserve_conditions(next, old, "Approved") < 0 ||
        preserve_conditions(next, old, "Denied") < 0)
        return CK_ENOMEM;
    return stamp_conditions(next, old);
}

/* A write of /approval: old with the body's conditions, stamped. */
static json_t *approval_update(const char *name, const json_t *body, const json_t *old,
                               struct ck_field_errors *errs, struct ck_err *reterr)
{
    (void)name;
    (void)errs;
    json_t *next = ck__json_copy(old);
    json_t *status = next ? ck__object_at(next, "status") : NULL;
    const json_t *asked = json_object_get(json_object_get(body, "status"), "conditions");
    int failed = !status;
    if (!failed && asked)
        failed = json_object_set_new(status, "conditions", ck__json_copy(asked)) < 0;
    else if (!failed)
        json_object_del(status, "conditions");
    /* metadata the body changes passes, as on any write of the object */
    json_t *meta = ck__json_copy(json_object_get(body, "metadata"));
    if (!failed && json_is_object(meta)) {
        failed = ck_meta_keep_server_owned(meta, json_object_get(old, "metadata")) < 0 ||
                 json_object_set(next, "metadata", meta) < 0;
    }
    json_decref(meta);
    if (failed || stamp_conditions(next, old) < 0) {
        json_decref(next);
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    return next;
}

/* ---- validation ----------------------------------------------------------------- */

/* Kubernetes' ValidateCertificateSigningRequestSignerName. */
static void validate_signer_name(const char *signer, struct ck_field_errors *errs)
{
    const char *f = "spec.signerName";
    if (!signer || !*signer) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "signerName must be provided");
        return;
    }
    const char *slash = strchr(signer, '/');
    if (!slash || strchr(slash + 1, '/')) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, signer, true,
                            "must be a fully qualified domain and path of the form "
                            "'example.com/signer-name'");
        return;
    }
    char domain[1024], path[1024];
    snprintf(domain, sizeof(domain), "%.*s", (int)(slash - signer), signer);
    snprintf(path, sizeof(path), "%s", slash + 1);
    if (strlen(domain) > 253)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, f, NULL, false,
                            "may not be more than 253 bytes");
    /* each dot-separated label of the domain a DNS-1123 label; of the path a subdomain */
    for (int part = 0; part < 2; part++) {
        char *whole = part == 0 ? domain : path;
        size_t labels = 0;
        char copy[1024];
        snprintf(copy, sizeof(copy), "%s", whole);
        char *lbl = copy;
        /* strtok would skip empty labels, which are errors */
        for (char *p = copy;; p++) {
            if (*p != '.' && *p != '\0')
                continue;
            bool last = *p == '\0';
            *p = '\0';
            labels++;
            struct ck_field_errors local = {0};
            bool ok = part == 0 ? ck_validate_dns1123_label(lbl, "x", &local)
                                : ck_validate_dns1123_subdomain(lbl, "x", &local);
            for (size_t i = 0; !ok && i < local.len; i++)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, whole, true,
                                    "validating label \"%s\": %s", lbl,
                                    local.items[i].detail ? local.items[i].detail : "");
            ck_field_errors_release(&local);
            if (!ok)
                break;
            if (last)
                break;
            lbl = p + 1;
        }
        if (part == 0 && labels < 2)
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, domain, true,
                                "should be a domain with at least two segments separated by dots");
    }
    if (strlen(signer) > 253 + 253 + 63 + 1 + 1)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, f, NULL, false,
                            "may not be more than 571 bytes");
}

static void validate_conditions(const json_t *obj, struct ck_field_errors *errs)
{
    const json_t *conditions = old_conditions(obj);
    bool approved = false, denied = false;
    size_t i, j;
    const json_t *c;
    char f[96];
    json_array_foreach(conditions, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        snprintf(f, sizeof(f), "status.conditions[%zu].type", i);
        if (!type || !*type)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        bool true_only = type && (strcmp(type, "Approved") == 0 || strcmp(type, "Denied") == 0 ||
                                  strcmp(type, "Failed") == 0);
        snprintf(f, sizeof(f), "status.conditions[%zu].status", i);
        if (!status || !*status)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        else if (true_only && strcmp(status, "True") != 0)
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, status, true,
                                "supported values: \"True\"");
        else if (!true_only && strcmp(status, "True") != 0 && strcmp(status, "False") != 0 &&
                 strcmp(status, "Unknown") != 0)
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, status, true,
                                "supported values: \"False\", \"True\", \"Unknown\"");
        snprintf(f, sizeof(f), "status.conditions[%zu].type", i);
        if (type && strcmp(type, "Approved") == 0) {
            approved = true;
            if (denied)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, type, true,
                                    "Approved and Denied conditions are mutually exclusive");
        } else if (type && strcmp(type, "Denied") == 0) {
            denied = true;
            if (approved)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, type, true,
                                    "Approved and Denied conditions are mutually exclusive");
        }
        for (j = 0; type && j < i; j++)
            if (condition_is(json_array_get(conditions, j), type)) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, f, type, true, NULL);
                break;
            }
    }
}

static size_t count_conditions(const json_t *obj, const char *type)
{
    size_t n = 0, i;
    const json_t *c;
    json_array_foreach(old_conditions(obj), i, c) n += condition_is(c, type);
    return n;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    struct ck_csr *csr = NULL;
    struct ck_err err = {0};
    int r = ck_csr_parse_request(obj, &csr, &err);
    if (r == CK_ENOMEM)
        errs->nomem = true;
    else if (r < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.request", "<request data>", false, "%s",
                            err.msg);
    ck_csr_free(csr);

    const json_t *usages = json_object_get(spec, "usages");
    size_t i, j;
    const json_t *u;
    char f[64];
    if (json_array_size(usages) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.usages", NULL, false,
                            "usages must be provided");
    json_array_foreach(usages, i, u)
    {
        const char *s = json_string_value(u);
        snprintf(f, sizeof(f), "spec.usages[%zu]", i);
        if (!ck_csr_usage_known(s))
            ck_field_errors_add(
                errs, CK_FIELD_NOT_SUPPORTED, f, s ? s : "", true,
                "supported values: \"any\", \"cert sign\", \"client auth\", \"code signing\", "
                "\"content commitment\", \"crl sign\", \"data encipherment\", \"decipher only\", "
                "\"digital signature\", \"email protection\", \"encipher only\", \"ipsec end "
                "system\", \"ipsec tunnel\", \"ipsec user\", \"key agreement\", \"key "
                "encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp signing\", "
                "\"s/mime\", \"server auth\", \"signing\", \"timestamping\"");
        for (j = 0; s && j < i; j++)
            if (json_equal(u, json_array_get(usages, j))) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, f, s, true, NULL);
                break;
            }
    }

    const char *signer = json_string_value(json_object_get(spec, "signerName"));
    if (signer && strcmp(signer, CK_SIGNER_LEGACY_UNKNOWN) == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.signerName", signer, true,
                            "the legacy signerName is not allowed via this API version");
    else
        validate_signer_name(signer, errs);

    const json_t *expiration = json_object_get(spec, "expirationSeconds");
    if (json_is_integer(expiration) && json_integer_value(expiration) < 600) {
        char v[32];
        snprintf(v, sizeof(v), "%lld", (long long)json_integer_value(expiration));
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.expirationSeconds", v, false,
                            "may not specify a duration less than 600 seconds (10 minutes)");
    }
    validate_conditions(obj, errs);

    const char *cert = ck__str_at(obj, "status.certificate");
    if (cert && *cert) {
        size_t len = 0;
        char *pem = ck_base64_decode(cert, &len);
        struct ck_err cerr = {0};
        if (!pem || ck_certificate_pem_check(pem, len, &cerr) < 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "status.certificate", "<certificate data>",
                                false, "%s", pem ? cerr.msg : "illegal base64 data");
        free(pem);
    }
    if (!old)
        return;
    static const char *const kept[] = {"Approved", "Denied", "Failed"};
    for (i = 0; i < CK__COUNT(kept); i++)
        if (count_conditions(obj, kept[i]) < count_conditions(old, kept[i]))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "status.conditions", NULL, false,
                                "updates may not remove a condition of type \"%s\"", kept[i]);
    const char *old_cert = ck__str_at(old, "status.certificate");
    if (old_cert && *old_cert && !(cert && strcmp(cert, old_cert) == 0))
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "status.certificate", NULL, false,
                            "updates may not modify existing certificate content");
}

/* ---- table ---------------------------------------------------------------------- */

enum {
    COL_NAME,
    COL_AGE,
    COL_SIGNER_NAME,
    COL_REQUESTOR,
    COL_REQUESTED_DURATION,
    COL_CONDITION,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *signer = ck__str_at(obj, "spec.signerName");
    const json_t *expiration = ck__json_path(obj, "spec.expirationSeconds");
    char duration[32] = "<none>";
    if (json_is_integer(expiration))
        ck_human_duration((long long)json_integer_value(expiration), duration, sizeof(duration));
    bool approved = false, denied = false, failed = false;
    size_t i;
    const json_t *c;
    json_array_foreach(old_conditions(obj), i, c)
    {
        approved = approved || condition_is(c, "Approved");
        denied = denied || condition_is(c, "Denied");
        failed = failed || condition_is(c, "Failed");
    }
    const char *cert = ck__str_at(obj, "status.certificate");
    char condition[64];
    snprintf(condition, sizeof(condition), "%s%s%s",
             denied     ? "Denied"
             : approved ? "Approved"
                        : "Pending",
             failed ? ",Failed" : "", cert && *cert ? ",Issued" : "");
    cells[COL_SIGNER_NAME] = json_string(signer && *signer ? signer : "<none>");
    cells[COL_REQUESTED_DURATION] = json_string(duration);
    cells[COL_CONDITION] = json_string(condition);
}

static const char *const short_names[] = {"csr", NULL};
static const char *const get_patch_update[] = {"get", "patch", "update", NULL};

static const struct ck_subresource subresources[] = {
    {.name = "approval",
     .part = CK_SUBRESOURCE_CUSTOM,
     .verbs = get_patch_update,
     .update = approval_update},
    {.name = "status",
     .part = CK_SUBRESOURCE_STATUS,
     .verbs = get_patch_update,
     .prepare = prepare_status},
};

static const struct ck_field_label field_labels[] = {
    {"spec.signerName", "spec.signerName", CK_FIELD_LABEL_STRING},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_SIGNER_NAME] =
        CK__COMPUTED_COLUMN("SignerName", "string", "Name of the signer the request is for.", 0),
    [COL_REQUESTOR] = {"Requestor", "string", "", "Name of the user who created the request.", 0,
                       ".spec.username", CK_CELL_ABSENT_EMPTY, false},
    [COL_REQUESTED_DURATION] = CK__COMPUTED_COLUMN(
        "RequestedDuration", "string", "Validity the request asks for the certificate.", 0),
    [COL_CONDITION] = CK__COMPUTED_COLUMN(
        "Condition", "string", "Approval state of the request and whether it was issued.", 0),
};

const struct ck_kind ck__kind_certificatesigningrequest = {
    .group = "certificates.k8s.io",
    .version = "v1",
    .kind = "CertificateSigningRequest",
    .list_kind = "CertificateSigningRequestList",
    .resource = "certificatesigningrequests",
    .singular = "certificatesigningrequest",
    .short_names = short_names,
    .namespaced = false,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .role = CK_KIND_ROLE_CERTIFICATE_SIGNING_REQUEST,
    .schema = "io.k8s.api.certificates.v1.CertificateSigningRequest",
    CK__KIND_SUBRESOURCES(subresources),
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .prepare_for_create_by = prepare_for_create_by,
    .prepare_for_update = prepare_for_update,
    .validate = validate,
};
