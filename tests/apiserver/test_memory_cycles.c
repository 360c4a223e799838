/*
 * test_memory_cycles.c - the API server gives back what a create and delete of
 * many objects took: a server in this process creates N ConfigMaps (1 KiB of
 * data each) and deletes them, several cycles in a row, and the process's
 * resident memory after each cycle must come back near where it was after the
 * first (warm-up) cycle.
 *
 *   test_apiserver_memory_cycles [N [CYCLES]]     (default: 300 objects, 3 cycles)
 *
 * make test runs the short form (under AddressSanitizer in the ASan build, whose
 * leak checker then looks for leaks at exit); the long form, `test_apiserver_memory_cycles
 * 10000 10` in a Release build, is the figure of docs/benchmarks.md; its record is in
 * docs/benchmarks/history.md ("Create and delete cycles").
 *
 * What is compared: VmRSS after ck__memory_release() (jemalloc's purge of every
 * arena, or glibc's malloc_trim(0): the allocator keeps freed memory otherwise,
 * so RSS would say nothing about leaks). The warm-up cycle fills what is bounded
 * and kept on purpose: the watch history (set here to 256 events, so one cycle
 * fills it at any N from 128 on), SQLite's page cache, libmicrohttpd's
 * connection pools, the allocator's arenas of the handler threads. After it
 * every cycle does the same work on the same amounts, so RSS must not grow
 * with the cycles: the limit is 4 MiB plus 1 % of the warm-up RSS over the
 * warm-up figure, room for arena fragmentation (a freed chunk that the release
 * cannot give back because a live one sits above it) and for SQLite's file
 * growing and its cache following it. A leak of a single 1 KiB object per
 * create would add N KiB per cycle: 10 MiB per cycle at N = 10,000, caught in
 * the long form; the short form relies on the leak checker for small leaks.
 *
 * Under AddressSanitizer RSS is not compared: its quarantine holds freed memory
 * on purpose (256 MiB by default) and malloc_trim does not reach its allocator.
 */
#include "cktest.h"

#include "apiserver/httptest.h"
#include "ckube/internal/util.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static unsigned objects = 300;
static unsigned cycles = 3;

/* The process's resident memory in KiB, after giving the allocator's free memory back. */
static long rss_kib(void)
{
    ck__memory_release();
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* One request on the kept-alive handle; returns the HTTP status. */
static long call(CURL *curl, const char *method, const char *url, const char *body)
{
    struct httptest_buf out = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }
    long status = 0;
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    free(out.buf);
    return status;
}

/* Creates `objects` ConfigMaps and deletes them; every answer must be a success. */
static void one_cycle(struct ck_apiserver *server, CURL *curl, unsigned cycle)
{
    char url[512], body[2048], filler[1025];
    memset(filler, 'x', 1024);
    filler[1024] = '\0';
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/configmaps", ck_apiserver_url(server));
    for (unsigned i = 0; i < objects; i++) {
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c%u-%u\","
                 "\"labels\":{\"cycle\":\"c%u\"}},\"data\":{\"filler\":\"%s\"}}",
                 cycle, i, cycle, filler);
        assert_int_equal(call(curl, "POST", url, body), 201);
    }
    for (unsigned i = 0; i < objects; i++) {
        snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/configmaps/c%u-%u",
                 ck_apiserver_url(server), cycle, i);
        assert_int_equal(call(curl, "DELETE", url, NULL), 200);
    }
    /* nothing of the cycle is left */
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/configmaps?labelSelector=cycle%%3Dc%u",
             ck_apiserver_url(server), cycle);
    struct httptest_buf out = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    assert_int_equal(curl_easy_perform(curl), CURLE_OK);
    json_t *list = json_loads(out.buf ? out.buf : "", 0, NULL);
    free(out.buf);
    assert_non_null(list);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 0);
    json_decref(list);
}

static void test_create_delete_cycles_give_memory_back(void **state)
{
    (void)state;
    char dir[] = "/tmp/ckube-memory-cycles-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char store[256];
    /* a watch history one cycle fills, so later cycles find it full (see the header) */
    snprintf(store, sizeof(store), "sqlite://%s/state.db?watch-history-events=256", dir);
    struct ck_apiserver_config config = {
        .disable_admission_plugins = "ServiceAccount", .listen = "127.0.0.1:0", .store_url = store};
    struct ck_apiserver *server = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_start(&config, &server, &err), 0);
    CURL *curl = curl_easy_init();
    assert_non_null(curl);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);

    long start = rss_kib();
    one_cycle(server, curl, 0); /* warm-up */
    long warm = rss_kib();
    long limit = 4096 + warm / 100;
    long worst = 0;
    printf("# %u objects a cycle: RSS %ld KiB at start, %ld KiB after the warm-up cycle\n", objects,
           start, warm);
    for (unsigned c = 1; c <= cycles; c++) {
        one_cycle(server, curl, c);
        long now = rss_kib();
        printf("# after cycle %u: RSS %ld KiB (%+ld KiB from the warm-up)\n", c, now, now - warm);
        if (now - warm > worst)
            worst = now - warm;
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    test_server_stop(server, dir);
    if (UNDER_ASAN) {
        printf("# RSS not compared under AddressSanitizer (its quarantine keeps freed memory); "
               "its leak checker runs at exit\n");
        return;
    }
    printf("# largest growth over the warm-up: %ld KiB (limit %ld KiB)\n", worst, limit);
    assert_true(start > 0 && warm > 0);
    assert_true(worst <= limit);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        objects = (unsigned)strtoul(argv[1], NULL, 10);
    if (argc > 2)
        cycles = (unsigned)strtoul(argv[2], NULL, 10);
    if (objects == 0 || cycles == 0) {
        fprintf(stderr, "usage: %s [OBJECTS [CYCLES]]\n", argv[0]);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_delete_cycles_give_memory_back),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
