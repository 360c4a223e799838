/*
 * validation.c - Kubernetes' rules for names, label keys and label values.
 *
 * Mirrors apimachinery pkg/util/validation: IsDNS1123Label (namespaces and
 * most names that become hostnames), IsDNS1123Subdomain (most object names),
 * IsQualifiedName (label and annotation keys: optional DNS-subdomain prefix
 * and '/', then a name part) and IsValidLabelValue. The messages are
 * Kubernetes' own, because users and tests compare them.
 */
#include <ctype.h>
#include <string.h>

#include "ckube/api.h"

#define DNS1123_LABEL_MAX     63
#define DNS1123_SUBDOMAIN_MAX 253
#define QUALIFIED_NAME_MAX    63
#define LABEL_VALUE_MAX       63

static const char dns1123_label_msg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
static const char dns1123_subdomain_msg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char qualified_name_part_msg[] =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
static const char qualified_name_msg[] =
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
static const char label_value_msg[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return isalnum((unsigned char)c) != 0;
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..len) */
static bool dns1123_label_shape(const char *s, size_t len)
{
    if (len == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
        return false;
    for (size_t i = 1; i + 1 < len; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* Labels separated by single dots, each a DNS-1123 label shape. */
static bool dns1123_subdomain_shape(const char *s, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (!dns1123_label_shape(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..len) */
static bool qualified_name_shape(const char *s, size_t len)
{
    if (len == 0 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 1; i + 1 < len; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

bool ck_validate_dns1123_label(const char *value, const char *field, struct ck_field_errors *errs)
{
    size_t len = strlen(value);
    bool ok = true;
    if (len > DNS1123_LABEL_MAX) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                "must be no more than %d characters", DNS1123_LABEL_MAX);
    }
    if (!dns1123_label_shape(value, len)) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true, "%s",
                                dns1123_label_msg);
    }
    return ok;
}

bool ck_validate_dns1123_subdomain(const char *value, const char *field,
                                   struct ck_field_errors *errs)
{
    size_t len = strlen(value);
    bool ok = true;
    if (len > DNS1123_SUBDOMAIN_MAX) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                "must be no more than %d characters", DNS1123_SUBDOMAIN_MAX);
    }
    if (!dns1123_subdomain_shape(value, len)) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true, "%s",
                                dns1123_subdomain_msg);
    }
    return ok;
}

bool ck_validate_qualified_name(const char *value, const char *field, struct ck_field_errors *errs)
{
    const char *slash = strchr(value, '/');
    const char *name = value;
    bool ok = true;
    if (slash) {
        if (strchr(slash + 1, '/')) {
            if (errs)
                ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true, "%s",
                                    qualified_name_msg);
            return false;
        }
        size_t prefix_len = (size_t)(slash - value);
        name = slash + 1;
        if (prefix_len == 0) {
            ok = false;
            if (errs)
                ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                    "prefix part must be non-empty");
        } else {
            if (prefix_len > DNS1123_SUBDOMAIN_MAX) {
                ok = false;
                if (errs)
                    ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                        "prefix part must be no more than %d characters",
                                        DNS1123_SUBDOMAIN_MAX);
            }
            if (!dns1123_subdomain_shape(value, prefix_len)) {
                ok = false;
                if (errs)
                    ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                        "prefix part %s", dns1123_subdomain_msg);
            }
        }
    }
    size_t len = strlen(name);
    if (len == 0) {
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                "name part must be non-empty");
        return false;
    }
    if (len > QUALIFIED_NAME_MAX) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                "name part must be no more than %d characters", QUALIFIED_NAME_MAX);
    }
    if (!qualified_name_shape(name, len)) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true, "%s",
                                qualified_name_part_msg);
    }
    return ok;
}

bool ck_validate_label_value(const char *value, const char *field, struct ck_field_errors *errs)
{
    size_t len = strlen(value);
    bool ok = true;
    if (len > LABEL_VALUE_MAX) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                                "must be no more than %d characters", LABEL_VALUE_MAX);
    }
    if (len > 0 && !qualified_name_shape(value, len)) {
        ok = false;
        if (errs)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true, "%s", label_value_msg);
    }
    return ok;
}
