/*
 * builtin.c - the schemas built into the library: every JSON document in
 * lib/api/schemas/, embedded at build time by cmake/embed.cmake.
 *
 * Tested through its callers: tests/api/test_discovery.c and test_gates.c load
 * the embedded set, and every API server test serves from it.
 */
#include "ckube/api.h"

extern const char *const ck__schema_documents[];
extern const size_t ck__schema_documents_count;

int ck_api_builtin_schemas(struct ck_schemas **ret_set, struct ck_err *reterr)
{
    return ck_schemas_new((const char *const *)ck__schema_documents, ck__schema_documents_count,
                          ret_set, reterr);
}
