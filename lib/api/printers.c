/*
 * printers.c - server-side printing: the Tables `kubectl get` shows.
 *
 * kubectl 1.32 has no column printers of its own for built-in kinds; it asks
 * the server for a meta.k8s.io/v1 Table. A kind describes its columns as
 * data (struct ck_table_column): a column with a json_path is filled here
 * from the object, as Kubernetes fills a custom resource's
 * additionalPrinterColumns (plain dotted paths directly, the rest by
 * Kubernetes' JSONPath in jsonpath.c), so built-in kinds and CRDs take one
 * path. Only
 * the cells a kind truly computes (a pod's READY and STATUS, an event's
 * OBJECT) come from its cells hook, in lib/api/kinds/<kind>.c; the contents
 * mirror Kubernetes' pkg/printers/internalversion/printers.go. Like the
 * Kubernetes API server, every row carries the cells of every column (wide
 * ones included) and kubectl hides priority-1 columns unless -o wide. Ages
 * are computed at response time by ck_human_duration().
 *
 * Threading: pure functions over the caller's values.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

const json_t *ck__json_path(const json_t *obj, const char *dotted)
{
    char part[128];
    const json_t *cur = obj;
    while (cur && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (len >= sizeof(part))
            return NULL;
        memcpy(part, dotted, len);
        part[len] = '\0';
        cur = json_object_get(cur, part);
        dotted += len + (dot ? 1 : 0);
    }
    return cur;
}

const char *ck__str_at(const json_t *obj, const char *dotted)
{
    return json_string_value(ck__json_path(obj, dotted));
}

long long ck__int_at(const json_t *obj, const char *dotted)
{
    return (long long)json_integer_value(ck__json_path(obj, dotted));
}

const char *ck__or_none(const char *s)
{
    return s && *s ? s : "<none>";
}

/* ---- durations ---------------------------------------------------------- */

const char *ck_human_duration(long long seconds, char *buf, size_t size)
{
    if (seconds < -1) {
        snprintf(buf, size, "<invalid>");
        return buf;
    }
    if (seconds < 0)
        seconds = 0;
    long long minutes = seconds / 60, hours = seconds / 3600, days = hours / 24;
    if (seconds < 120)
        snprintf(buf, size, "%llds", seconds);
    else if (minutes < 10 && seconds % 60)
        snprintf(buf, size, "%lldm%llds", minutes, seconds % 60);
    else if (minutes < 180)
        snprintf(buf, size, "%lldm", minutes);
    else if (hours < 8 && minutes % 60)
        snprintf(buf, size, "%lldh%lldm", hours, minutes % 60);
    else if (hours < 48)
        snprintf(buf, size, "%lldh", hours);
    else if (hours < 24 * 8 && hours % 24)
        snprintf(buf, size, "%lldd%lldh", days, hours % 24);
    else if (hours < 24 * 365 * 2)
        snprintf(buf, size, "%lldd", days);
    else if (hours < 24 * 365 * 8 && days % 365)
        snprintf(buf, size, "%lldy%lldd", days / 365, days % 365);
    else
        snprintf(buf, size, "%lldy", days / 365);
    return buf;
}

const char *ck_age(const char *timestamp, long long now, char *buf, size_t size)
{
    int64_t t;
    if (ck__time_parse(timestamp, &t, NULL) < 0) {
        snprintf(buf, size, "<unknown>");
        return buf;
    }
    return ck_human_duration(now - t, buf, size);
}

/* ---- cells from the object ---------------------------------------------- */

/*
 * Whether v is a value column c prints: one of its type; a string column also
 * prints a number or a boolean, as text. Anything else counts as absent.
 */
static bool printable(const struct ck_table_column *c, const json_t *v)
{
    if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return false;
    if (strcmp(c->type, "integer") == 0)
        return json_is_integer(v);
    if (strcmp(c->type, "number") == 0)
        return json_is_number(v);
    if (strcmp(c->type, "boolean") == 0)
        return json_is_boolean(v);
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

/* The cell of column c for the value v its path selected (NULL: none). New reference. */
static json_t *value_cell(const struct ck_table_column *c, const json_t *v, long long now)
{
    if (c->age || strcmp(c->type, "date") == 0) {
        char buf[32];
        return json_string(ck_age(json_string_value(v), now, buf, sizeof(buf)));
    }
    if (printable(c, v) && !json_is_string(v) && strcmp(c->type, "string") == 0) {
        char *text = ck__json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT, NULL);
        json_t *out = text ? json_string(text) : NULL;
        free(text);
        return out;
    }
    if (printable(c, v))
        return ck__json_copy(v);
    switch (c->absent) {
    case CK_CELL_ABSENT_NONE:
        return json_string("<none>");
    case CK_CELL_ABSENT_EMPTY:
        return json_string("");
    case CK_CELL_ABSENT_ZERO:
        return json_integer(0);
    case CK_CELL_ABSENT_NULL:
        break;
    }
    return json_null();
}

/* A plain dotted path (".spec.replicas"), read without the JSONPath evaluator. */
static bool is_dotted(const char *path)
{
    if (path[0] != '.')
        return false;
    for (const char *p = path; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' ||
              (*p == '.' && p[1] != '.' && p[1] != '\0')))
            return false;
    return true;
}

/* The cell of a column with a json_path (Kubernetes' JSONPath). New reference. */
static json_t *path_cell(const struct ck_table_column *c, const json_t *obj, long long now)
{
    json_t *found = NULL; /* what a JSONPath selected (a literal may be new) */
    const json_t *v;
    if (is_dotted(c->json_path) || c->json_path[0] != '.')
        v = ck__json_path(obj, c->json_path[0] == '.' ? c->json_path + 1 : c->json_path);
    else
        v = found = ck_jsonpath_first(c->json_path, obj);
    json_t *cell = value_cell(c, v, now);
    json_decref(found);
    return cell;
}

int ck_table_row_cells(const struct ck_kind *kind, const json_t *obj, long long now, json_t *cells)
{
    json_t *stack[16];
    json_t **slots = kind->n_columns <= 16 ? stack : ck__calloc(kind->n_columns, sizeof(*slots));
    if (!slots)
        return CK_ENOMEM;
    memset(slots, 0, kind->n_columns * sizeof(*slots));
    if (kind->cells)
        kind->cells(obj, now, slots);
    int r = 0;
    for (size_t i = 0; i < kind->n_columns; i++) {
        const struct ck_table_column *c = &kind->columns[i];
        json_t *cell = slots[i];
        if (c->json_path) {
            json_decref(cell); /* the path wins over a hook that filled it anyway */
            cell = path_cell(c, obj, now);
        }
        /* every cell is a value: a missing one ran out of memory (the setter frees cell) */
        if (r == 0 && json_array_append_new(cells, cell) < 0)
            r = CK_ENOMEM;
        else if (r < 0)
            json_decref(cell);
    }
    if (slots != stack)
        free(slots);
    return r;
}

/* ---- the Table ---------------------------------------------------------- */

int ck_include_object_parse(const char *text, enum ck_include_object *ret)
{
    if (!text || !*text || strcmp(text, "Metadata") == 0)
        *ret = CK_INCLUDE_METADATA;
    else if (strcmp(text, "Object") == 0)
        *ret = CK_INCLUDE_OBJECT;
    else if (strcmp(text, "None") == 0)
        *ret = CK_INCLUDE_NONE;
    else
        return CK_EINVAL;
    return 0;
}

static json_t *row_object(json_t *obj, enum ck_include_object include)
{
    if (include == CK_INCLUDE_OBJECT)
        return json_incref(obj);
    json_t *meta = json_object_get(obj, "metadata");
    return json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata", "apiVersion",
                     "meta.k8s.io/v1", "metadata", meta ? json_incref(meta) : json_object());
}

json_t *ck_table_build(const struct ck_kind *kind, json_t *const *objects, size_t n_objects,
                       bool with_columns, enum ck_include_object include,
                       const char *resource_version, const char *continue_token, long long now)
{
    json_t *columns = json_array();
    json_t *rows = json_array();
    json_t *table = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:o, s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
        "metadata", "resourceVersion", resource_version ? resource_version : "", "continue",
        continue_token ? continue_token : "", "columnDefinitions", columns, "rows", rows);
    if (!table)
        return NULL;
    int failed = 0;
    for (size_t i = 0; with_columns && i < kind->n_columns && !failed; i++) {
        const struct ck_table_column *c = &kind->columns[i];
        failed = json_array_append_new(columns, json_pack("{s:s, s:s, s:s, s:s, s:i}", "name",
                                                          c->name, "type", c->type, "format",
                                                          c->format, "description", c->description,
                                                          "priority", c->priority));
    }
    for (size_t i = 0; i < n_objects && !failed; i++) {
        json_t *cells = json_array();
        if (!cells || ck_table_row_cells(kind, objects[i], now, cells) < 0) {
            json_decref(cells);
            failed = -1;
            break;
        }
        json_t *row = json_pack("{s:o}", "cells", cells);
        if (row && include != CK_INCLUDE_NONE)
            failed |= json_object_set_new(row, "object", row_object(objects[i], include));
        failed |= json_array_append_new(rows, row);
    }
    if (failed) /* out of memory: never a Table with rows or cells missing */
        table = (json_decref(table), NULL);
    return table;
}

void ck__cells_created_at(const json_t *obj, long long now, json_t **row)
{
    (void)now;
    const char *ts = ck__str_at(obj, "metadata.creationTimestamp");
    row[1] = ts ? json_string(ts) : json_null();
}
