/*
 * test_cni.c - tests for lib/agent/cni.c, the node's CNI configuration: a directory
 * that holds one (as containerd's CRI picks it: the first *.conf, *.conflist or *.json
 * in byte order, directories left out) is left alone; otherwise 10-ckube.conflist is
 * written, parses, and holds the bridge with the given range and portmap (loopback is
 * containerd's own network), and is written again when the node's range changes; with no
 * range yet, an earlier start's own file is no network (its range is read back) and
 * nothing is written, and why is said; the range chosen for the node: the Node's
 * spec.podCIDR, --pod-cidr only once due; bad ranges and a missing or
 * non-executable plugin are refused with the reason and nothing written; no temporary file is ever
 * left, also when allocations fail.
 */
#define _GNU_SOURCE /* nftw */
#include "cktest.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/util.h"
#include "scratch.h"

/* A scratch directory with a fake plugin directory `bin` and the configuration's `net.d`. */
struct dirs {
    char root[64], bin[128], conf[128], out[4096];
};

static const char *const all_plugins[] = {"bridge", "host-local", "portmap", "loopback"};

static void put_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
    struct dirs *d = calloc(1, sizeof(*d));
    if (!d || scratch_make_dir(d->root, sizeof(d->root), "cni") < 0) {
        free(d);
        return -1;
    }
    snprintf(d->bin, sizeof(d->bin), "%s/bin", d->root);
    snprintf(d->conf, sizeof(d->conf), "%s/etc/cni/net.d", d->root);
    if (mkdir(d->bin, 0755) < 0)
        return -1;
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    struct dirs *d = *state;
    scratch_remove_dir(d->root);
    free(d);
    return 0;
}

/* Puts the four plugins into the fake plugin directory as empty executables. */
static void put_plugins(const struct dirs *d)
{
    for (size_t i = 0; i < sizeof(all_plugins) / sizeof(all_plugins[0]); i++)
        put_file(d->bin, all_plugins[i], "", 0755);
}

/* The names in dir, sorted and joined by blanks ("" when empty; "-" when absent). */
static void list_dir(const char *dir, char *buf, size_t size)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    buf[0] = '\0';
    if (n < 0) {
        snprintf(buf, size, "-");
        return;
    }
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", name);
        free(names[i]);
    }
    free(names);
}

static void test_existing_config_left_alone(void **state)
{
    struct dirs *d = *state;
    char listing[512];
    char parent[256];
    snprintf(parent, sizeof(parent), "%s/etc", d->root);
    assert_int_equal(mkdir(parent, 0755), 0);
    snprintf(parent, sizeof(parent), "%s/etc/cni", d->root);
    assert_int_equal(mkdir(parent, 0755), 0);
    assert_int_equal(mkdir(d->conf, 0700), 0);
    /* not configurations: another extension, none, a directory with the right one */
    put_file(d->conf, "00-notes.txt", "hello", 0644);
    put_file(d->conf, "01-conf", "{}", 0644);
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/05-dir.conf", d->conf);
    assert_int_equal(mkdir(sub, 0755), 0);
    put_file(d->conf, "99-last.json", "{}", 0644);
    put_file(d->conf, "20-addon.conflist", "{\"name\": \"addon\"}", 0644);

    /* no plugins at all and a bad range: neither matters when a configuration exists */
    struct ck_err err = {0};
    bool written = true;
    assert_int_equal(ck__cni_ensure_config(d->conf, d->bin, "not a range", d->out, sizeof(d->out),
                                           &written, &err),
                     0);
    assert_false(written);
    char want[512];
    snprintf(want, sizeof(want), "%s/20-addon.conflist", d->conf);
    assert_string_equal(d->out, want);
    list_dir(d->conf, listing, sizeof(listing));
    assert_string_equal(listing, "00-notes.txt 01-conf 05-dir.conf 20-addon.conflist 99-last.json");
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ck__read_file(want, 4096, &text, &len), 0);
    assert_string_equal(text, "{\"name\": \"addon\"}");
    free(text);

    /* a .conf file that sorts first wins, as containerd loads the first one */
    put_file(d->conf, "15-first.conf", "{}", 0644);
    assert_int_equal(ck__cni_find_config(d->conf, d->out, sizeof(d->out), &err), 0);
    snprintf(want, sizeof(want), "%s/15-first.conf", d->conf);
    assert_string_equal(d->out, want);
    /* a buffer too small for the path is an error, not a cut path */
    assert_int_equal(ck__cni_find_config(d->conf, d->out, 8, &err), CK_EINVAL);
}

static void test_written_config_holds_the_range(void **state)
{
    struct dirs *d = *state;
    put_plugins(d);
    struct ck_err err = {0};
    bool written = false;
    assert_int_equal(ck__cni_find_config(d->conf, NULL, 0, &err), CK_ENOENT);
    int r = ck__cni_ensure_config(d->conf, d->bin, "10.244.3.0/24", d->out, sizeof(d->out),
                                  &written, &err);
    assert_int_equal(r, 0);
    assert_true(written);
    char want[512];
    snprintf(want, sizeof(want), "%s/10-ckube.conflist", d->conf);
    assert_string_equal(d->out, want);

    /* the directory and its parents were made, 0755 less the umask */
    struct stat st;
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(stat(d->conf, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0755 & ~mask);
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);

    json_error_t jerr;
    json_t *conf = json_load_file(want, 0, &jerr);
    assert_non_null(conf);
    assert_string_equal(json_string_value(json_object_get(conf, "cniVersion")), "0.4.0");
    assert_string_equal(json_string_value(json_object_get(conf, "name")), "ckube");
    json_t *plugins = json_object_get(conf, "plugins");
    assert_int_equal(json_array_size(plugins), 2); /* loopback is containerd's own */
    json_t *bridge = json_array_get(plugins, 0);
    assert_string_equal(json_string_value(json_object_get(bridge, "type")), "bridge");
    assert_string_equal(json_string_value(json_object_get(bridge, "bridge")), "ckube0");
    assert_true(json_is_true(json_object_get(bridge, "isGateway")));
    assert_true(json_is_true(json_object_get(bridge, "ipMasq")));
    assert_true(json_is_true(json_object_get(bridge, "hairpinMode")));
    assert_true(json_is_true(json_object_get(bridge, "forceAddress")));
    json_t *ipam = json_object_get(bridge, "ipam");
    assert_string_equal(json_string_value(json_object_get(ipam, "type")), "host-local");
    json_t *ranges = json_object_get(ipam, "ranges");
    assert_int_equal(json_array_size(ranges), 1);
    assert_int_equal(json_array_size(json_array_get(ranges, 0)), 1);
    json_t *range = json_array_get(json_array_get(ranges, 0), 0);
    assert_string_equal(json_string_value(json_object_get(range, "subnet")), "10.244.3.0/24");
    json_t *route = json_array_get(json_object_get(ipam, "routes"), 0);
    assert_string_equal(json_string_value(json_object_get(route, "dst")), "0.0.0.0/0");
    json_t *portmap = json_array_get(plugins, 1);
    assert_string_equal(json_string_value(json_object_get(portmap, "type")), "portmap");
    assert_true(
        json_is_true(json_object_get(json_object_get(portmap, "capabilities"), "portMappings")));
    json_decref(conf);

    /* no temporary file next to it */
    char listing[512];
    list_dir(d->conf, listing, sizeof(listing));
    assert_string_equal(listing, "10-ckube.conflist");

    /* its range, as a restarted agent's runtime reads it */
    char own[64] = "";
    assert_int_equal(ck__cni_own_range(d->conf, own, sizeof(own)), 1);
    assert_string_equal(own, "10.244.3.0/24");
    assert_int_equal(ck__cni_own_range(d->conf, own, 8), 0); /* does not fit */

    /* a second start finds it and writes nothing with the same range; with none yet it
       is no network (an earlier start's range need not be the node's), still unchanged */
    char *before = NULL, *after = NULL;
    size_t len = 0;
    assert_int_equal(ck__read_file(want, 1 << 16, &before, &len), 0);
    const char *same[] = {"10.244.3.0/24", NULL};
    for (size_t i = 0; i < 2; i++) {
        written = true;
        d->out[0] = 0;
        r = ck__cni_ensure_config(d->conf, d->bin, same[i], d->out, sizeof(d->out), &written, &err);
        if (same[i]) {
            assert_int_equal(r, 0);
            assert_false(written);
            assert_string_equal(d->out, want);
        } else {
            assert_int_equal(r, CK_ENOENT);
            assert_non_null(strstr(err.msg, "no pod CIDR for the node yet"));
            assert_non_null(strstr(err.msg, "--pod-cidr"));
        }
        assert_int_equal(ck__read_file(want, 1 << 16, &after, &len), 0);
        assert_string_equal(before, after);
        free(after);
    }
    free(before);

    /* the node's range changed: its own file is written again for the new one */
    assert_int_equal(ck__cni_ensure_config(d->conf, d->bin, "10.99.0.0/16", d->out, sizeof(d->out),
                                           &written, &err),
                     0);
    assert_true(written);
    assert_string_equal(d->out, want);
    conf = json_load_file(want, 0, &jerr);
    const char *subnet = NULL;
    assert_int_equal(json_unpack(conf, "{s:[{s:{s:[[{s:s}]]}}]}", "plugins", "ipam", "ranges",
                                 "subnet", &subnet),
                     0);
    assert_string_equal(subnet, "10.99.0.0/16");
    json_decref(conf);
    list_dir(d->conf, listing, sizeof(listing));
    assert_string_equal(listing, "10-ckube.conflist");

    /* a file of the same name another wrote in another shape is not ours to judge: kept,
       with a range or none, and it tells no range */
    put_file(d->conf, "10-ckube.conflist", "{\"name\": \"other\"}", 0644);
    assert_int_equal(ck__cni_ensure_config(d->conf, d->bin, "10.98.0.0/16", d->out, sizeof(d->out),
                                           &written, &err),
                     0);
    assert_false(written);
    assert_int_equal(
        ck__cni_ensure_config(d->conf, d->bin, NULL, d->out, sizeof(d->out), &written, &err), 0);
    assert_int_equal(ck__cni_own_range(d->conf, own, sizeof(own)), 0);
}

/* The range the agent gives the runtime: the Node's; the flag only once it is due. */
static void test_node_range(void **state)
{
    (void)state;
    json_t *with = json_pack("{s:{s:s}}", "spec", "podCIDR", "10.244.0.0/24");
    json_t *empty = json_pack("{s:{s:s}}", "spec", "podCIDR", "");
    json_t *none = json_pack("{s:{}}", "spec");
    const char *flag = "10.99.0.0/24";
    for (int due = 0; due < 2; due++) {
        assert_string_equal(ck__cni_node_range(with, flag, due), "10.244.0.0/24");
        assert_string_equal(ck__cni_node_range(with, NULL, due), "10.244.0.0/24");
        assert_null(ck__cni_node_range(none, NULL, due));
        assert_null(ck__cni_node_range(empty, "", due));
        assert_null(ck__cni_node_range(NULL, NULL, due));
    }
    /* no range on the Node: the flag once the agent waited for the Node's */
    assert_null(ck__cni_node_range(none, flag, false));
    assert_null(ck__cni_node_range(empty, flag, false));
    assert_ptr_equal(ck__cni_node_range(none, flag, true), flag);
    assert_ptr_equal(ck__cni_node_range(empty, flag, true), flag);
    assert_ptr_equal(ck__cni_node_range(NULL, flag, true), flag);
    json_decref(with);
    json_decref(empty);
    json_decref(none);
}

static void test_bad_ranges_refused(void **state)
{
    struct dirs *d = *state;
    put_plugins(d);
    static const struct {
        const char *cidr, *words;
    } bad[] = {
        {"", "empty"},
        {"10.88.0.0", "want an IPv4 network"},
        {"/16", "want an IPv4 network"},
        {"10.88.0.0/", "must be a number"},
        {"10.88.0.0/x", "must be a number"},
        {"10.88.0.0/16x", "must be a number"},
        {"10.88.0.0/016", "must be a number"},
        {"10.88.0.0/-1", "must be a number"},
        {"10.88.0.0/123", "must be a number"},
        {"10.88.0/16", "is not an IPv4 address"},
        {"10.88.0.256/16", "is not an IPv4 address"},
        {"ten.0.0.0/8", "is not an IPv4 address"},
        {"fd00::/64", "only an IPv4 range"},
        {"10.0.0.0/7", "8 to 30"},
        {"0.0.0.0/0", "8 to 30"},
        {"10.88.0.0/31", "leaves no pod addresses"},
        {"10.88.0.1/32", "8 to 30"},
        {"10.88.0.1/16", "host bits are set (the network is 10.88.0.0/16)"},
        {"192.168.1.130/25", "the network is 192.168.1.128/25"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ck_err err = {0};
        bool written = false;
        int r = ck__cni_ensure_config(d->conf, d->bin, bad[i].cidr, d->out, sizeof(d->out),
                                      &written, &err);
        if (r != CK_EINVAL || !strstr(err.msg, bad[i].words))
            fail_msg("pod CIDR \"%s\": %d \"%s\", want CK_EINVAL with \"%s\"", bad[i].cidr, r,
                     err.msg, bad[i].words);
        assert_false(written);
    }
    char listing[64];
    list_dir(d->conf, listing, sizeof(listing));
    assert_string_equal(listing, "-"); /* the directory was not even made */

    static const char *const good[] = {"10.0.0.0/8", "10.88.0.0/16", "192.168.1.4/30",
                                       "172.16.0.0/12", "192.168.1.128/25"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct ck_err err = {0};
        if (ck__cni_parse_cidr(good[i], &err) != 0)
            fail_msg("pod CIDR \"%s\" refused: %s", good[i], err.msg);
    }
}

static void test_missing_plugin_named(void **state)
{
    struct dirs *d = *state;
    put_file(d->bin, "bridge", "", 0755);
    put_file(d->bin, "host-local", "", 0755);
    put_file(d->bin, "loopback", "", 0755);
    struct ck_err err = {0};
    bool written = false;
    assert_int_equal(ck__cni_ensure_config(d->conf, d->bin, "10.244.0.0/24", d->out, sizeof(d->out),
                                           &written, &err),
                     CK_ENOENT);
    assert_non_null(strstr(err.msg, "\"portmap\""));
    assert_non_null(strstr(err.msg, d->bin));
    assert_non_null(strstr(err.msg, "containernetworking-plugins"));
    assert_false(written);

    /* there but not executable: refused the same way */
    put_file(d->bin, "portmap", "", 0644);
    assert_int_equal(ck__cni_ensure_config(d->conf, d->bin, "10.244.0.0/24", d->out, sizeof(d->out),
                                           &written, &err),
                     CK_ENOENT);
    assert_non_null(strstr(err.msg, "\"portmap\""));

    /* a directory by the plugin's name neither */
    char path[256];
    snprintf(path, sizeof(path), "%s/loopback", d->bin);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0755), 0);
    put_file(d->bin, "portmap", "", 0755);
    assert_int_equal(ck__cni_ensure_config(d->conf, d->bin, "10.244.0.0/24", d->out, sizeof(d->out),
                                           &written, &err),
                     CK_ENOENT);
    assert_non_null(strstr(err.msg, "\"loopback\""));
    char listing[64];
    list_dir(d->conf, listing, sizeof(listing));
    assert_string_equal(listing, "-");

    /* every plugin there but no range for the node yet: nothing to write, and why */
    assert_int_equal(rmdir(path), 0);
    put_file(d->bin, "loopback", "", 0755);
    assert_int_equal(
        ck__cni_ensure_config(d->conf, d->bin, NULL, d->out, sizeof(d->out), &written, &err),
        CK_ENOENT);
    assert_non_null(strstr(err.msg, "spec.podCIDR"));
    assert_non_null(strstr(err.msg, "--pod-cidr"));
    assert_false(written);
    list_dir(d->conf, listing, sizeof(listing));
    assert_string_equal(listing, "-");
}

static void test_conf_dir_not_a_directory(void **state)
{
    struct dirs *d = *state;
    put_plugins(d);
    char file[256];
    snprintf(file, sizeof(file), "%s/plain", d->root);
    put_file(d->root, "plain", "", 0644);
    struct ck_err err = {0};
    int r =
        ck__cni_ensure_config(file, d->bin, "10.244.0.0/24", d->out, sizeof(d->out), NULL, &err);
    assert_true(r < 0 && r != CK_ENOENT);
    assert_non_null(strstr(err.msg, file));
    /* a dangling symlink in its place: not there to read, and it cannot be made */
    char link[300];
    snprintf(link, sizeof(link), "%s/net.d", d->root);
    assert_int_equal(symlink("nowhere", link), 0);
    r = ck__cni_ensure_config(link, d->bin, "10.244.0.0/24", d->out, sizeof(d->out), NULL, &err);
    assert_true(r < 0);
    assert_non_null(strstr(err.msg, "cannot create"));
}

static void test_allocation_failures_leave_nothing(void **state)
{
    struct dirs *d = *state;
    put_plugins(d);
    int r = CK_ENOMEM;
    unsigned long n;
    for (n = 1; n < 200 && r == CK_ENOMEM; n++) {
        struct ck_err err = {0};
        bool written = false;
        ck__alloc_fail_at(n, false);
        r = ck__cni_ensure_config(d->conf, d->bin, "10.1.0.0/16", d->out, sizeof(d->out), &written,
                                  &err);
        ck__alloc_fail_at(0, false);
        char listing[256];
        list_dir(d->conf, listing, sizeof(listing));
        if (r == CK_ENOMEM) {
            assert_false(written);
            /* no file at all: neither the configuration nor a temporary one */
            if (strcmp(listing, "-") != 0 && strcmp(listing, "") != 0)
                fail_msg("allocation %lu failed, and %s holds: %s", n, d->conf, listing);
        } else {
            assert_int_equal(r, 0);
            assert_true(written);
            assert_string_equal(listing, "10-ckube.conflist");
        }
    }
    assert_int_equal(r, 0);
    assert_true(n > 2); /* some allocations did fail first */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_existing_config_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_config_holds_the_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_ranges_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_plugin_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conf_dir_not_a_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocation_failures_leave_nothing, setup, teardown),
        cmocka_unit_test(test_node_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
