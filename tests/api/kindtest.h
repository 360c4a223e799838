/*
 * kindtest.h - helpers the per-group kind tests share: look a kind up,
 * validate an object against it and look for one error, default an object
 * by its schema, and read one cell of the table the server would answer
 * (or look for several errors, or several cells, from one table of them).
 */
#ifndef CKUBE_TESTS_KINDTEST_H
#define CKUBE_TESTS_KINDTEST_H

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static inline const struct ck_kind *kt_kind(const char *group, const char *resource)
{
    const struct ck_kind *k = ck_kind_lookup(group, "v1", resource);
    assert_non_null(k);
    return k;
}

/* Validates obj (against old when given); asserts an error includes want, or none when NULL. */
static inline void kt_expect(const struct ck_kind *k, const json_t *obj, const json_t *old,
                             const char *want)
{
    struct ck_field_errors errs = {0};
    ck_meta_validate(k, obj, old, &errs);
    bool found = false;
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        if (!want)
            fail_msg("unexpected error: %s", s);
        else if (strstr(s, want))
            found = true;
        free(s);
    }
    if (want && !found)
        fail_msg("no error containing \"%s\" (%zu errors)", want, errs.len);
    ck_field_errors_release(&errs);
}

/* Defaults obj by kind's schema and its computed defaults. */
static inline void kt_default(const struct ck_kind *k, json_t *obj)
{
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_api_builtin_schemas(&set, &err), 0);
    assert_int_equal(ck_schema_default(set, k->schema, obj), 0);
    if (k->defaults)
        assert_int_equal(k->defaults(obj), 0);
    ck_schemas_free(set);
}

/* The cell of column `name` in obj's table row, as a new string (caller frees). */
static inline char *kt_cell(const struct ck_kind *k, json_t *obj, const char *name)
{
    json_t *t = ck_table_build(k, &obj, 1, true, CK_INCLUDE_NONE, "1", NULL, 1800000000LL);
    assert_non_null(t);
    const json_t *cols = json_object_get(t, "columnDefinitions");
    const json_t *cells = json_object_get(json_array_get(json_object_get(t, "rows"), 0), "cells");
    char *out = NULL;
    for (size_t i = 0; i < json_array_size(cols); i++) {
        const char *n = json_string_value(json_object_get(json_array_get(cols, i), "name"));
        if (n && strcmp(n, name) == 0) {
            const json_t *c = json_array_get(cells, i);
            out = json_is_string(c) ? strdup(json_string_value(c)) : json_dumps(c, JSON_ENCODE_ANY);
        }
    }
    json_decref(t);
    assert_non_null(out);
    return out;
}

static inline void kt_expect_cell(const struct ck_kind *k, json_t *obj, const char *name,
                                  const char *want)
{
    char *got = kt_cell(k, obj, name);
    assert_string_equal(got, want);
    free(got);
}

/* kt_expect for each message of wants (NULL-terminated): obj has every one of those errors. */
static inline void kt_expect_all(const struct ck_kind *k, const json_t *obj, const json_t *old,
                                 const char *const *wants)
{
    for (; *wants; wants++)
        kt_expect(k, obj, old, *wants);
}

/* A column's name and the cell wanted in it. */
struct kt_cell_want {
    const char *name, *want;
};

/* kt_expect_cell for each of cells, up to the one whose name is NULL. */
static inline void kt_expect_cells(const struct ck_kind *k, json_t *obj,
                                   const struct kt_cell_want *cells)
{
    for (; cells->name; cells++)
        kt_expect_cell(k, obj, cells->name, cells->want);
}

#endif /* CKUBE_TESTS_KINDTEST_H */
