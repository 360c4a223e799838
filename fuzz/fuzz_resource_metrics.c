/*
 * fuzz_resource_metrics.c - libFuzzer target for the API server's reading of a node
 * agent's /metrics/resource (lib/apiserver/metrics_api.c), kubelet's Prometheus text that
 * metrics.k8s.io is built from: the input is split at its first NUL into two scrapes of
 * one node, read, then every PodMetrics and the NodeMetrics built from them. Every
 * container read must carry NUL-terminated names no longer than a label value may be
 * kept; the objects are built or refused without undefined behaviour (UBSan watches
 * the rates' conversions) and without a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct ck__node_scrape *s)
{
    if (s->n > s->cap)
        abort();
    for (size_t i = 0; i < s->n; i++)
        if (strlen(s->c[i].ns) > 253 || strlen(s->c[i].pod) > 253 || strlen(s->c[i].name) > 253)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, 0, size);
    size_t first = nul ? (size_t)(nul - text) : size;
    struct ck__node_scrape prev, cur;
    if (ck__metrics_scrape_parse(text, first, &prev) < 0)
        return 0;
    const char *rest = nul ? nul + 1 : text + size;
    if (ck__metrics_scrape_parse(rest, size - (size_t)(rest - text), &cur) < 0) {
        ck__node_scrape_release(&prev);
        return 0;
    }
    check(&prev);
    check(&cur);
    json_decref(ck__node_metrics_object("n1", NULL, &prev, &cur, 0));
    for (size_t i = 0; i < cur.n; i++)
        json_decref(ck__pod_metrics_object(cur.c[i].ns, cur.c[i].pod, NULL, &prev, &cur, 0));
    ck__node_scrape_release(&prev);
    ck__node_scrape_release(&cur);
    return 0;
}
