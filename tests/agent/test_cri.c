/*
 * test_cri.c - the CRI client's messages (lib/agent/cri.c) against bytes
 * protoc wrote from cri-api's api.proto (tests/data/cri, generate.sh there):
 * each request the client writes is byte for byte what `protoc --encode`
 * makes of the same message, and each answer protoc encoded decodes to the
 * values in its text form, fields the client does not read (maps, runtime
 * handlers, features, an image's spec) skipped. Then what a hostile runtime
 * could send: every truncation of every answer, a string with a NUL, a field
 * of the wrong wire type, a length past the end; allocation failures while
 * decoding; the errors of failed calls (gRPC status as Go prints it); and a
 * call to a socket nobody serves. Calls against a real containerd are
 * tests/agent/test_cri_containerd.sh's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/util.h"

/* A fixture's bytes (the caller releases them). */
static struct ck__buf fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.bin", CKUBE_CRI_DATA, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct ck__buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        assert_int_equal(ck__buf_add(&b, chunk, n), 0);
    fclose(f);
    assert_true(b.len > 0);
    return b;
}

static struct ck__pb_reader reader(const struct ck__buf *b)
{
    return (struct ck__pb_reader){(const unsigned char *)b->p,
                                  (const unsigned char *)b->p + b->len};
}

static void assert_encodes_as(struct ck__buf *got, const char *name)
{
    struct ck__buf want = fixture(name);
    assert_int_equal(got->err, 0);
    assert_int_equal(got->len, want.len);
    assert_memory_equal(got->p, want.p, want.len);
    ck__buf_release(&want);
    ck__buf_release(got);
}

static void test_requests_match_protoc(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    ck__cri_encode_version(&b, "0.1.0");
    assert_encodes_as(&b, "version_request");
    ck__cri_encode_status(&b, true);
    assert_encodes_as(&b, "status_request");
    ck__cri_encode_list_images(&b, "docker.io/library/busybox:latest");
    assert_encodes_as(&b, "list_images_request");
    ck__cri_encode_image_status(&b, "example.test/busybox:1.35", true);
    assert_encodes_as(&b, "image_status_request");
    struct ck__cri_auth auth = {.username = "user",
                                .password = "secret",
                                .auth = "dXNlcjpzZWNyZXQ=",
                                .server_address = "example.test",
                                .identity_token = "id-token",
                                .registry_token = "reg-token"};
    ck__cri_encode_pull_image(&b, "example.test/app:v1", &auth);
    assert_encodes_as(&b, "pull_image_request");
    ck__cri_encode_remove_image(&b, "sha256:77");
    assert_encodes_as(&b, "remove_image_request");
    /* defaults are left out, as proto3 (and protoc) write them */
    ck__cri_encode_status(&b, false);
    ck__cri_encode_list_images(&b, NULL);
    ck__cri_encode_version(&b, NULL);
    assert_int_equal(b.len, 0);
    ck__cri_encode_pull_image(&b, "x", NULL); /* no auth: just the spec, 1 { 1: "x" } */
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.p, "\x0a\x03\x0a\x01x", 5);
    ck__buf_release(&b);
}

static void test_version_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("version_response");
    struct ck__cri_version v;
    assert_int_equal(ck__cri_decode_version(reader(&b), &v), 0);
    assert_string_equal(v.version, "0.1.0");
    assert_string_equal(v.runtime_name, "containerd");
    assert_string_equal(v.runtime_version, "1.6.20~ds1");
    assert_string_equal(v.runtime_api_version, "v1");
    ck__cri_version_release(&v);
    ck__buf_release(&b);
}

static void test_status_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("status_response");
    struct ck__cri_status s;
    assert_int_equal(ck__cri_decode_status(reader(&b), &s), 0);
    assert_int_equal(s.n_conditions, 2);
    const struct ck__cri_condition *rt = ck__cri_status_condition(&s, "RuntimeReady");
    const struct ck__cri_condition *net = ck__cri_status_condition(&s, "NetworkReady");
    assert_non_null(rt);
    assert_true(rt->status);
    assert_null(rt->reason);
    assert_non_null(net);
    assert_false(net->status);
    assert_string_equal(net->reason, "NetworkPluginNotReady");
    assert_string_equal(net->message, "Network plugin returns error: cni plugin not initialized");
    assert_null(ck__cri_status_condition(&s, "Other"));
    ck__cri_status_release(&s);
    ck__buf_release(&b);
}

static void test_list_images_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("list_images_response");
    struct ck__cri_images l;
    assert_int_equal(ck__cri_decode_list_images(reader(&b), &l), 0);
    assert_int_equal(l.n, 2);
    struct ck__cri_image *a = &l.items[0], *z = &l.items[1];
    assert_string_equal(a->id,
                        "sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9");
    assert_int_equal(a->n_repo_tags, 2);
    assert_string_equal(a->repo_tags[0], "docker.io/library/busybox:latest");
    assert_string_equal(a->repo_tags[1], "example.test/busybox:1.35");
    assert_int_equal(a->n_repo_digests, 1);
    assert_string_equal(a->repo_digests[0], "docker.io/library/busybox@sha256:"
                                            "ffeeddccbbaa99887766554433221100ffeeddccbbaa9988776655"
                                            "4433221100");
    assert_int_equal(a->size, 1234567);
    assert_true(a->has_uid); /* uid {value: 0}: an empty message, still present */
    assert_int_equal(a->uid, 0);
    assert_null(a->username);
    assert_true(a->pinned);
    assert_string_equal(z->id, "sha256:99");
    assert_int_equal(z->n_repo_tags, 0);
    assert_true(z->size == UINT64_MAX);
    assert_false(z->has_uid);
    assert_string_equal(z->username, "nobody");
    assert_false(z->pinned);
    ck__cri_images_release(&l);
    ck__buf_release(&b);
}

static void test_image_status_response(void **state)
{
    (void)state;
    struct ck__buf b = fixture("image_status_response");
    struct ck__cri_image img;
    bool found = false;
    assert_int_equal(ck__cri_decode_image_status(reader(&b), &img, &found), 0);
    assert_true(found);
    assert_string_equal(img.id, "sha256:77");
    assert_int_equal(img.n_repo_tags, 1);
    assert_string_equal(img.repo_tags[0], "example.test/busybox:1.35");
    assert_int_equal(img.size, 1048576);
    assert_true(img.has_uid);
    assert_int_equal(img.uid, 65534);
    ck__cri_image_release(&img);
    ck__buf_release(&b);
    /* an image the runtime does not have: an empty ImageStatusResponse */
    struct ck__pb_reader none = {(const unsigned char *)"", (const unsigned char *)""};
    assert_int_equal(ck__cri_decode_image_status(none, &img, &found), 0);
    assert_false(found);
    assert_null(img.id);
}

static void test_pull_and_fs_info_responses(void **state)
{
    (void)state;
    struct ck__buf b = fixture("pull_image_response");
    char *ref = NULL;
    assert_int_equal(ck__cri_decode_pull_image(reader(&b), &ref), 0);
    assert_string_equal(ref, "sha256:5e5e");
    free(ref);
    ck__buf_release(&b);

    b = fixture("image_fs_info_response");
    struct ck__cri_fs_info f;
    assert_int_equal(ck__cri_decode_fs_info(reader(&b), &f), 0);
    assert_int_equal(f.n_image_fs, 1);
    assert_int_equal(f.n_container_fs, 1);
    assert_true(f.image_fs[0].timestamp == 1765000000000000000LL);
    assert_string_equal(f.image_fs[0].mountpoint,
                        "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs");
    assert_true(f.image_fs[0].has_used_bytes);
    assert_int_equal(f.image_fs[0].used_bytes, 4096000);
    assert_true(f.image_fs[0].has_inodes_used);
    assert_int_equal(f.image_fs[0].inodes_used, 321);
    assert_true(f.container_fs[0].timestamp == -1); /* int64 as ten varint bytes */
    assert_string_equal(f.container_fs[0].mountpoint, "/var/lib/containerd");
    assert_false(f.container_fs[0].has_used_bytes);
    assert_false(f.container_fs[0].has_inodes_used);
    ck__cri_fs_info_release(&f);
    ck__buf_release(&b);
}

/* Decodes the answer with the decoder its fixture is for; 0 or the decoder's code. */
static int decode_as(const char *name, struct ck__pb_reader r)
{
    int e;
    if (strcmp(name, "version_response") == 0) {
        struct ck__cri_version v;
        if ((e = ck__cri_decode_version(r, &v)) == 0)
            ck__cri_version_release(&v);
    } else if (strcmp(name, "status_response") == 0) {
        struct ck__cri_status s;
        if ((e = ck__cri_decode_status(r, &s)) == 0)
            ck__cri_status_release(&s);
    } else if (strcmp(name, "list_images_response") == 0) {
        struct ck__cri_images l;
        if ((e = ck__cri_decode_list_images(r, &l)) == 0)
            ck__cri_images_release(&l);
    } else if (strcmp(name, "image_status_response") == 0) {
        struct ck__cri_image img;
        bool found;
        if ((e = ck__cri_decode_image_status(r, &img, &found)) == 0)
            ck__cri_image_release(&img);
    } else if (strcmp(name, "pull_image_response") == 0) {
        char *ref;
        if ((e = ck__cri_decode_pull_image(r, &ref)) == 0)
            free(ref);
    } else {
        struct ck__cri_fs_info f;
        if ((e = ck__cri_decode_fs_info(r, &f)) == 0)
            ck__cri_fs_info_release(&f);
    }
    return e;
}

static const char *const ANSWERS[] = {"version_response",     "status_response",
                                      "list_images_response", "image_status_response",
                                      "pull_image_response",  "image_fs_info_response"};

/*
 * Every prefix of every answer, each in a buffer of exactly its length (ASan sees a
 * read past it): a cut inside a field is malformed, a cut between top-level fields a
 * shorter answer; never anything else, never a leak.
 */
static void test_truncated_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ANSWERS) / sizeof(*ANSWERS); i++) {
        struct ck__buf b = fixture(ANSWERS[i]);
        size_t malformed = 0;
        for (size_t n = 0; n < b.len; n++) {
            unsigned char *copy = malloc(n ? n : 1);
            memcpy(copy, b.p, n);
            int e = decode_as(ANSWERS[i], (struct ck__pb_reader){copy, copy + n});
            if (e != 0 && e != CK_EIO)
                fail_msg("%s cut at %zu: %d", ANSWERS[i], n, e);
            malformed += e == CK_EIO;
            free(copy);
        }
        assert_true(malformed > b.len / 2); /* most cuts fall inside a field */
        assert_int_equal(decode_as(ANSWERS[i], reader(&b)), 0);
        ck__buf_release(&b);
    }
}

static void test_malformed_answers(void **state)
{
    (void)state;
    struct ck__cri_version v;
    struct ck__cri_images l;
#define R(s)                                                                                       \
    ((struct ck__pb_reader){(const unsigned char *)(s), (const unsigned char *)(s) + sizeof(s) - 1})
    /* runtime_name "con\0d": a string with a NUL */
    assert_int_equal(ck__cri_decode_version(R("\x12\x05"
                                              "con\0d"),
                                            &v),
                     CK_EIO);
    /* runtime_name as a varint: the wrong wire type */
    assert_int_equal(ck__cri_decode_version(R("\x10\x05"), &v), CK_EIO);
    /* a length past the end */
    assert_int_equal(ck__cri_decode_version(R("\x12\x7f"
                                              "abc"),
                                            &v),
                     CK_EIO);
    /* a malformed tag (field number 0) */
    assert_int_equal(ck__cri_decode_version(R("\x00\x01"), &v), CK_EIO);
    /* an image whose second repo tag is cut: the whole answer is refused, no leak */
    assert_int_equal(ck__cri_decode_list_images(R("\x0a\x07\x12\x01"
                                                  "a\x12\x05"
                                                  "bc"),
                                                &l),
                     CK_EIO);
    /* images as a varint */
    assert_int_equal(ck__cri_decode_list_images(R("\x08\x01"), &l), CK_EIO);
    /* an unknown field of every wire type is skipped */
    assert_int_equal(ck__cri_decode_version(R("\x78\x01\x79\x01\x02\x03\x04\x05\x06\x07\x08"
                                              "\x7a\x01z\x7d\x01\x02\x03\x04\x12\x01x"),
                                            &v),
                     0);
    assert_string_equal(v.runtime_name, "x");
    ck__cri_version_release(&v);
    /* a field given twice: the last one wins */
    assert_int_equal(ck__cri_decode_version(R("\x12\x01"
                                              "a\x12\x02"
                                              "bb"),
                                            &v),
                     0);
    assert_string_equal(v.runtime_name, "bb");
    ck__cri_version_release(&v);
#undef R
}

/* Allocation failure at every step of decoding a list: a clean CK_ENOMEM, no leak. */
static void test_decode_allocation_failures(void **state)
{
    (void)state;
    struct ck__buf b = fixture("list_images_response");
    int e = CK_ENOMEM;
    unsigned long n;
    for (n = 1; n < 1000 && e == CK_ENOMEM; n++) {
        struct ck__cri_images l;
        ck__alloc_fail_at(n, false);
        e = ck__cri_decode_list_images(reader(&b), &l);
        ck__alloc_fail_at(0, false);
        if (e == 0) {
            assert_int_equal(l.n, 2);
            ck__cri_images_release(&l);
        }
    }
    assert_int_equal(e, 0);
    assert_true(n > 5); /* some allocations did fail first */
    ck__buf_release(&b);
}

static void test_status_errors(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_int_equal(
        ck__cri_status_error("ImageService", "ImageStatus", 5, "image \"x\" not found", &err),
        CK_ENOENT);
    assert_string_equal(err.msg, "cri: ImageService ImageStatus: rpc error: code = NotFound desc "
                                 "= image \"x\" not found");
    assert_int_equal(ck__cri_status_error("RuntimeService", "Version", 3, "bad", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "code = InvalidArgument desc = bad"));
    assert_int_equal(ck__cri_status_error("RuntimeService", "Status", 12, "", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Unimplemented desc = "));
    assert_int_equal(ck__cri_status_error("ImageService", "PullImage", 16, "who", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Unauthenticated desc = who"));
    /* a code gRPC does not define: Go prints its number */
    assert_int_equal(ck__cri_status_error("ImageService", "PullImage", 17, "?", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Code(17) desc = ?"));
    /* nor does any gRPC send a negative one; still a number, not a table read */
    assert_int_equal(ck__cri_status_error("ImageService", "PullImage", -1, "?", &err), CK_EIO);
    assert_non_null(strstr(err.msg, "code = Code(-1) desc = ?"));
}

static void test_unreachable_runtime(void **state)
{
    (void)state;
    struct ck__cri *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(
        ck__cri_open("unix:///nonexistent-ckube-dir/containerd.sock", NULL, 2000, &c, &err), 0);
    struct ck__cri_version v = {0};
    assert_int_equal(ck__cri_version(c, "0.1.0", &v, &err), CK_EIO);
    assert_null(v.runtime_name);
    assert_non_null(strstr(err.msg, "RuntimeService Version"));
    assert_non_null(strstr(err.msg, "unix:///nonexistent-ckube-dir/containerd.sock"));
    assert_non_null(strstr(err.msg, "No such file or directory"));
    struct ck__cri_images l = {0};
    assert_int_equal(ck__cri_list_images(c, NULL, &l, &err), CK_EIO);
    assert_non_null(strstr(err.msg, "ImageService ListImages"));
    c = ck__cri_close(c);
    assert_null(ck__cri_close(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_match_protoc),
        cmocka_unit_test(test_version_response),
        cmocka_unit_test(test_status_response),
        cmocka_unit_test(test_list_images_response),
        cmocka_unit_test(test_image_status_response),
        cmocka_unit_test(test_pull_and_fs_info_responses),
        cmocka_unit_test(test_truncated_answers),
        cmocka_unit_test(test_malformed_answers),
        cmocka_unit_test(test_decode_allocation_failures),
        cmocka_unit_test(test_status_errors),
        cmocka_unit_test(test_unreachable_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
