/*
 * test_cri_containerd.c - the CRI client (lib/agent/cri.c) against a real
 * containerd, which tests/agent/test_cri_containerd.sh starts on a socket of
 * its own and gives an image it built and imported. Read from the
 * environment: CKUBE_CRI_ENDPOINT (unix:///...), CKUBE_CRI_IMAGE (the image's
 * name), CKUBE_CRI_IMAGE_ID (the digest of its config: the id CRI reports),
 * CKUBE_CRI_IMAGE_MIN_SIZE (the bytes of its blobs, which its size counts at
 * least), CKUBE_CRI_ROOT (containerd's root directory).
 *
 * Version answers containerd and CRI v1; Status has RuntimeReady true; the
 * image is listed and its status gives its id and size; ImageFsInfo names a
 * filesystem under containerd's root; RemoveImage removes it (listed no more,
 * no status, and a second removal is no error, as CRI asks); a pull from a
 * registry nothing serves fails with the runtime's words and gRPC status.
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

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set: run this through test_cri_containerd.sh", name);
    return v;
}

static struct ck__cri *cri;

static int setup(void **state)
{
    (void)state;
    struct ck_err err = {0};
    return ck__cri_open(env("CKUBE_CRI_ENDPOINT"), NULL, 30000, &cri, &err);
}

static int teardown(void **state)
{
    (void)state;
    cri = ck__cri_close(cri);
    return 0;
}

/* Whether the runtime lists image by one of its tags. */
static bool listed(const char *image)
{
    struct ck__cri_images l;
    struct ck_err err = {0};
    if (ck__cri_list_images(cri, NULL, &l, &err) < 0)
        fail_msg("ListImages: %s", err.msg);
    bool found = false;
    for (size_t i = 0; i < l.n; i++)
        for (size_t t = 0; t < l.items[i].n_repo_tags; t++)
            found |= strcmp(l.items[i].repo_tags[t], image) == 0;
    ck__cri_images_release(&l);
    return found;
}

static void test_version_and_status(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck__cri_version v;
    if (ck__cri_version(cri, "0.1.0", &v, &err) < 0)
        fail_msg("Version: %s", err.msg);
    assert_string_equal(v.runtime_name, "containerd");
    assert_string_equal(v.runtime_api_version, "v1");
    assert_non_null(v.runtime_version);
    print_message("runtime %s %s, CRI %s\n", v.runtime_name, v.runtime_version,
                  v.runtime_api_version);
    ck__cri_version_release(&v);

    struct ck__cri_status s;
    if (ck__cri_status(cri, &s, &err) < 0)
        fail_msg("Status: %s", err.msg);
    const struct ck__cri_condition *rt = ck__cri_status_condition(&s, "RuntimeReady");
    const struct ck__cri_condition *net = ck__cri_status_condition(&s, "NetworkReady");
    assert_non_null(rt);
    assert_true(rt->status);
    assert_non_null(net); /* ready or not: no CNI configuration is the test's business */
    print_message("NetworkReady %s %s\n", net->status ? "true" : "false",
                  net->message ? net->message : "");
    ck__cri_status_release(&s);
}

static void test_images(void **state)
{
    (void)state;
    const char *image = env("CKUBE_CRI_IMAGE");
    struct ck_err err = {0};
    assert_true(listed(image));

    struct ck__cri_image img;
    bool found = false;
    if (ck__cri_image_status(cri, image, &img, &found, &err) < 0)
        fail_msg("ImageStatus: %s", err.msg);
    assert_true(found);
    assert_string_equal(img.id, env("CKUBE_CRI_IMAGE_ID"));
    assert_true(img.size >= strtoull(env("CKUBE_CRI_IMAGE_MIN_SIZE"), NULL, 10));
    bool tagged = false;
    for (size_t t = 0; t < img.n_repo_tags; t++)
        tagged |= strcmp(img.repo_tags[t], image) == 0;
    assert_true(tagged);
    print_message("image %s, %llu bytes\n", img.id, (unsigned long long)img.size);
    ck__cri_image_release(&img);

    struct ck__cri_fs_info f;
    if (ck__cri_image_fs_info(cri, &f, &err) < 0)
        fail_msg("ImageFsInfo: %s", err.msg);
    assert_true(f.n_image_fs >= 1);
    const char *root = env("CKUBE_CRI_ROOT");
    assert_non_null(f.image_fs[0].mountpoint);
    assert_memory_equal(f.image_fs[0].mountpoint, root, strlen(root));
    assert_true(f.image_fs[0].has_used_bytes);
    print_message("image filesystem %s, %llu bytes used\n", f.image_fs[0].mountpoint,
                  (unsigned long long)f.image_fs[0].used_bytes);
    ck__cri_fs_info_release(&f);

    if (ck__cri_remove_image(cri, image, &err) < 0)
        fail_msg("RemoveImage: %s", err.msg);
    assert_false(listed(image));
    found = true;
    if (ck__cri_image_status(cri, image, &img, &found, &err) < 0)
        fail_msg("ImageStatus after removal: %s", err.msg);
    assert_false(found);
    /* removing what is not there succeeds (CRI: "must not return an error") */
    if (ck__cri_remove_image(cri, image, &err) < 0)
        fail_msg("RemoveImage again: %s", err.msg);
}

static void test_pull_from_nowhere(void **state)
{
    (void)state;
    struct ck_err err = {0};
    char *ref = NULL;
    /* loopback port 1: nothing serves it, and nothing leaves the machine */
    int r = ck__cri_pull_image(cri, "127.0.0.1:1/none:latest", NULL, 30000, &ref, &err);
    print_message("PullImage: %s\n", err.msg);
    assert_int_equal(r, CK_EIO);
    assert_null(ref);
    assert_non_null(strstr(err.msg, "cri: ImageService PullImage: rpc error: code = "));
    assert_non_null(strstr(err.msg, "127.0.0.1:1"));
    assert_false(listed("127.0.0.1:1/none:latest"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_status),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_pull_from_nowhere),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
