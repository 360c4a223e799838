/*
 * internal.h - private to lib/api; never installed.
 *
 * What kinds.c needs from printers.c (each kind's columns and row printer)
 * and small JSON helpers shared by the files of the module.
 */
#ifndef CKUBE_API_INTERNAL_H
#define CKUBE_API_INTERNAL_H

#include "ckube/api.h"

/* The value at a dotted path ("spec.template.metadata"), or NULL. Borrowed. */
const json_t *ck__json_path(const json_t *obj, const char *dotted);

#define CK__NAMESPACE_COLUMNS  3
#define CK__POD_COLUMNS        9
#define CK__NODE_COLUMNS       10
#define CK__EVENT_COLUMNS      10
#define CK__DEPLOYMENT_COLUMNS 8
#define CK__REPLICASET_COLUMNS 8
#define CK__FROBBER_COLUMNS    5

extern const struct ck_table_column ck__namespace_columns[CK__NAMESPACE_COLUMNS];
extern const struct ck_table_column ck__pod_columns[CK__POD_COLUMNS];
extern const struct ck_table_column ck__node_columns[CK__NODE_COLUMNS];
extern const struct ck_table_column ck__event_columns[CK__EVENT_COLUMNS];
extern const struct ck_table_column ck__deployment_columns[CK__DEPLOYMENT_COLUMNS];
extern const struct ck_table_column ck__replicaset_columns[CK__REPLICASET_COLUMNS];
extern const struct ck_table_column ck__frobber_columns[CK__FROBBER_COLUMNS];

void ck__namespace_row(const json_t *obj, long long now, json_t *cells);
void ck__pod_row(const json_t *obj, long long now, json_t *cells);
void ck__node_row(const json_t *obj, long long now, json_t *cells);
void ck__event_row(const json_t *obj, long long now, json_t *cells);
void ck__deployment_row(const json_t *obj, long long now, json_t *cells);
void ck__replicaset_row(const json_t *obj, long long now, json_t *cells);
void ck__frobber_row(const json_t *obj, long long now, json_t *cells);

/* Follows $ref / allOf [{$ref}] to the schema describing a value; NULL-safe. */
const json_t *ck__schema_resolve(const struct ck_schemas *set, const json_t *schema);

/* The kinds' strategy hooks (strategy.c). */
void ck__pod_prepare_for_create(json_t *obj);
void ck__pod_defaults(json_t *obj);
void ck__pod_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs);
void ck__namespace_prepare_for_create(json_t *obj);
void ck__namespace_prepare_for_update(json_t *obj, const json_t *old);
void ck__namespace_defaults(json_t *obj);
void ck__deployment_defaults(json_t *obj);
void ck__deployment_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs);
void ck__deployment_prepare_for_create(json_t *obj);
void ck__replicaset_prepare_for_create(json_t *obj);
void ck__workload_defaults(json_t *obj);
void ck__workload_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs);

#endif /* CKUBE_API_INTERNAL_H */
