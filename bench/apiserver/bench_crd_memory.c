/*
 * bench_crd_memory.c - what 1,000 CustomResourceDefinitions cost in memory
 * once served, measured inside one process: the heap in use (glibc's
 * mallinfo2 uordblks, which fragmentation does not inflate) before and after
 * building the kinds of N definitions (lib/api/customresource.c) and
 * registering them in one snapshot (ck_kinds_change()), as a server does at
 * start. The definition is the one bench/apiserver/crd.py installs: a
 * four-field schema with defaults and bounds, two printer columns, a status
 * subresource, one version. For reference it also reports the heap that N
 * decoded copies of the definition object take (what a list of them costs
 * as jansson values).
 *
 * Usage: bench_crd_memory [N]   (default 1000)
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

static const char crd_fmt[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.g%d.bench.example.com\"},"
    "\"spec\":{\"group\":\"g%d.bench.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\","
    "\"listKind\":\"WidgetList\"},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{"
    "\"cronSpec\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"
    "\"replicas\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"default\":1},"
    "\"paused\":{\"type\":\"boolean\",\"default\":false}},\"required\":[\"cronSpec\"]},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"}}}}}},"
    "\"subresources\":{\"status\":{}},"
    "\"additionalPrinterColumns\":[{\"name\":\"Spec\",\"type\":\"string\","
    "\"jsonPath\":\".spec.cronSpec\"},{\"name\":\"Replicas\",\"type\":\"integer\","
    "\"jsonPath\":\".spec.replicas\"}]}]}}";

static double mib(size_t bytes)
{
    return (double)bytes / 1048576.0;
}

static double kib_each(size_t bytes, int n)
{
    return (double)bytes / 1024.0 / n;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    struct ck_schemas *base = NULL;
    if (ck_api_builtin_schemas(&base, NULL) < 0)
        return 1;
    size_t n_kinds = 0;
    ck_kinds(&n_kinds); /* the built-in kinds registered first */
    char text[4096];

    size_t before = heap_in_use();
    json_t **objects = calloc((size_t)n, sizeof(*objects));
    for (int i = 0; i < n; i++) {
        snprintf(text, sizeof(text), crd_fmt, i, i);
        objects[i] = json_loads(text, 0, NULL);
    }
    size_t decoded = heap_in_use() - before;
    size_t text_len = strlen(text);

    before = heap_in_use();
    const struct ck_kind **add = calloc((size_t)n, sizeof(*add));
    for (int i = 0; i < n; i++) {
        struct ck_crd_kinds *kinds = NULL;
        struct ck_err err = {0};
        if (ck_crd_kinds_new(objects[i], base, &kinds, &err) < 0 ||
            ck_crd_kinds_count(kinds) != 1) {
            fprintf(stderr, "definition %d: %s\n", i, ck_err_message(&err));
            return 1;
        }
        add[i] = ck_crd_kinds_get(kinds, 0); /* kept: registered kinds live until exit */
    }
    size_t built = heap_in_use() - before;
    size_t skipped = 0;
    if (ck_kinds_change(NULL, 0, add, (size_t)n, &skipped, NULL) < 0 || skipped)
        return 1;
    size_t registered = heap_in_use() - before;
    size_t total = 0;
    ck_kinds(&total);
    printf("%d definitions (%zu bytes of JSON each), %zu kinds registered\n", n, text_len, total);
    printf("kinds built (descriptors, strings, columns, schema sets): %.1f MiB, %.1f KiB each\n",
           mib(built), kib_each(built, n));
    printf("and registered in one snapshot: %.1f MiB, %.1f KiB each\n", mib(registered),
           kib_each(registered, n));
    printf("reference: the definitions as decoded JSON objects: %.1f MiB, %.1f KiB each\n",
           mib(decoded), kib_each(decoded, n));
    return 0;
}
