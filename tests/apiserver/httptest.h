/*
 * httptest.h - what the API server's tests share: a server on a free
 * loopback port over a fresh SQLite store, and one HTTP call with libcurl.
 */
#ifndef CKUBE_TESTS_HTTPTEST_H
#define CKUBE_TESTS_HTTPTEST_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ckube/apiserver.h"

struct response {
    long status;
    char *body;
    size_t len;
    char *headers;
    size_t headers_len;
};

struct httptest_buf {
    char *buf;
    size_t len;
};

static inline size_t httptest_collect(char *data, size_t size, size_t nmemb, void *userp)
{
    struct httptest_buf *b = userp;
    size_t n = size * nmemb;
    char *grown = realloc(b->buf, b->len + n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, data, n);
    b->len += n;
    grown[b->len] = '\0';
    b->buf = grown;
    return n;
}

/*
 * METHOD path with an optional body and extra header lines (NULL-terminated
 * list or NULL); the caller frees ret->body and ret->headers.
 */
/* http_call() with a body of len bytes, which may hold NULs (a protobuf body). */
static inline void http_call_n(struct ck_apiserver *server, const char *method, const char *path,
                               const char *body, size_t len, const char *const *headers,
                               struct response *ret)
{
    char url[2048];
    snprintf(url, sizeof(url), "%s%s", ck_apiserver_url(server), path);
    memset(ret, 0, sizeof(*ret));
    struct httptest_buf out = {0}, head = {0};
    CURL *curl = curl_easy_init();
    if (!curl)
        abort();
    struct curl_slist *list = NULL;
    int typed = 0;
    for (size_t i = 0; headers && headers[i]; i++) {
        list = curl_slist_append(list, headers[i]);
        typed |= strncasecmp(headers[i], "Content-Type:", 13) == 0;
    }
    if (body && !typed) /* what kubectl sends; libcurl would say form-urlencoded */
        list = curl_slist_append(list, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
        fprintf(stderr, "%s %s: %s\n", method, path, curl_easy_strerror(rc));
        abort();
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &ret->status);
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    ret->body = out.buf ? out.buf : calloc(1, 1);
    ret->len = out.len;
    ret->headers = head.buf ? head.buf : calloc(1, 1);
    ret->headers_len = head.len;
}

static inline void http_call(struct ck_apiserver *server, const char *method, const char *path,
                             const char *body, const char *const *headers, struct response *ret)
{
    http_call_n(server, method, path, body, body ? strlen(body) : 0, headers, ret);
}

static inline void response_release(struct response *r)
{
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof(*r));
}

/* Makes dir (a mkdtemp template) and writes the sqlite:// URL of a store in it. */
static inline int test_store_dir(char *dir, char *url, size_t size)
{
    if (!mkdtemp(dir))
        return -1;
    snprintf(url, size, "sqlite://%s/state.db", dir);
    return 0;
}

/* Removes the store's files and dir. */
static inline void test_store_remove(const char *dir)
{
    char path[512];
    static const char *const files[] = {"state.db", "state.db-wal", "state.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/*
 * A server on 127.0.0.1:0 over a fresh SQLite store under dir (a mkdtemp template),
 * with the admission plugins enable and disable say (kube-apiserver's flags).
 */
static inline struct ck_apiserver *test_server_start_admission(char *dir, const char *enable,
                                                               const char *disable)
{
    char store[256];
    if (test_store_dir(dir, store, sizeof(store)) < 0)
        return NULL;
    struct ck_apiserver_config config = {.enable_admission_plugins = enable,
                                         .disable_admission_plugins = disable,
                                         .listen = "127.0.0.1:0",
                                         .store_url = store};
    struct ck_apiserver *server = NULL;
    struct ck_err err = {0};
    if (ck_apiserver_start(&config, &server, &err) < 0) {
        fprintf(stderr, "start: %s\n", err.msg);
        return NULL;
    }
    return server;
}

/* The same with the default plugins but ServiceAccount: pods need no account. */
static inline struct ck_apiserver *test_server_start(char *dir)
{
    return test_server_start_admission(dir, NULL, "ServiceAccount");
}

static inline void test_server_stop(struct ck_apiserver *server, const char *dir)
{
    ck_apiserver_free(server);
    test_store_remove(dir);
}

/*
 * A cmocka per-test fixture (cmocka_unit_test_setup_teardown(test, test_serve,
 * test_unserve)): a server of test_server_start() on a fresh store, which
 * served(state) hands to the test.
 */
struct test_served {
    char dir[40];
    struct ck_apiserver *server;
};

static inline int test_serve(void **state)
{
    struct test_served *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    snprintf(s->dir, sizeof(s->dir), "/tmp/ckube-test-XXXXXX");
    s->server = test_server_start(s->dir);
    if (!s->server) {
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static inline int test_unserve(void **state)
{
    struct test_served *s = *state;
    test_server_stop(s->server, s->dir);
    free(s);
    return 0;
}

static inline struct ck_apiserver *served(void **state)
{
    return ((struct test_served *)*state)->server;
}

#endif /* CKUBE_TESTS_HTTPTEST_H */
