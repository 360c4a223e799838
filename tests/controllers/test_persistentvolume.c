/*
 * test_persistentvolume.c - the persistentvolume-binder controller on fakes, with the
 * facts of Kubernetes' pkg/controller/volume/persistentvolume binder_test.go and
 * index_test.go: the smallest volume that fits, the fewest access modes first, selectors,
 * classes, volumeMode, pre-bound volumes and claims, what binding writes (claimRef,
 * annotations, phases, the claim's capacity), WaitForFirstConsumer, external and
 * local-path provisioning, release and reclaim (Retain, Delete, no plugin), lost claims;
 * a local-path volume's directory removed on Delete only when the provisioner made it
 * under its directory, a symlink in it removed as a link, a failed removal as
 * VolumeFailedDelete with the volume kept.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckube/internal/util.h"
#include "ckube/persistentvolume.h"
#include "fixtures.h"

struct env {
    char storage[64]; /* the local-path provisioner's directory, made for the test */
    struct fx_cache volumes, claims, classes;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_pv_controller *c;
    const struct ck_resource *pv_res, *pvc_res, *sc_res;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    snprintf(e->storage, sizeof(e->storage), "/tmp/ckube-pv-storage-XXXXXX");
    if (!mkdtemp(e->storage))
        return -1;
    fx_cache_init(&e->volumes);
    fx_cache_init(&e->claims);
    fx_cache_init(&e->classes);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_pv_controller_deps deps = {.client = &e->client,
                                         .volumes = &e->volumes.lister,
                                         .claims = &e->claims.lister,
                                         .classes = &e->classes.lister,
                                         .local_path_dir = e->storage};
    assert_int_equal(ck_pv_controller_new_with(&deps, &e->c, NULL), 0);
    e->pv_res = ck_controller_resource("", "v1", "persistentvolumes");
    e->pvc_res = ck_controller_resource("", "v1", "persistentvolumeclaims");
    e->sc_res = ck_controller_resource("storage.k8s.io", "v1", "storageclasses");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_pv_controller_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->volumes);
    fx_cache_release(&e->claims);
    fx_cache_release(&e->classes);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->storage);
    int r = system(cmd);
    free(e);
    return r == 0 ? 0 : -1;
}

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    if (!o)
        fail_msg("bad JSON in the test: %s: %s", err.text, text);
    return o;
}

/* A volume: name, size, modes ("[\"ReadWriteOnce\"]"), class, phase and more spec (or ""). */
static void add_volume(struct env *e, const char *name, const char *size, const char *modes,
                       const char *cls, const char *phase, const char *more_spec,
                       const char *more_meta)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"%s\","
             "\"uid\":\"uid-%s\",\"resourceVersion\":\"1\"%s},\"spec\":{\"capacity\":{\"storage\":"
             "\"%s\"},\"accessModes\":%s,\"storageClassName\":\"%s\",\"hostPath\":{\"path\":"
             "\"/d\"}%s},\"status\":{\"phase\":\"%s\"}}",
             name, name, more_meta, size, modes, cls, more_spec, phase);
    json_t *v = parse(text);
    assert_int_equal(ck_fake_client_seed(e->fc, e->pv_res, v), 0);
    fx_cache_add(&e->volumes, v);
}

/* A claim in default: name, request, modes, class (NULL: none), more spec and metadata. */
static void add_claim(struct env *e, const char *name, const char *size, const char *modes,
                      const char *cls, const char *more_spec, const char *more_meta)
{
    char text[2048], class_field[128] = "";
    if (cls)
        snprintf(class_field, sizeof(class_field), ",\"storageClassName\":\"%s\"", cls);
    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":"
             "\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":\"1\"%s},"
             "\"spec\":{\"accessModes\":%s,\"resources\":{\"requests\":{\"storage\":\"%s\"}}%s%s},"
             "\"status\":{\"phase\":\"Pending\"}}",
             name, name, more_meta, modes, size, class_field, more_spec);
    json_t *c = parse(text);
    assert_int_equal(ck_fake_client_seed(e->fc, e->pvc_res, c), 0);
    fx_cache_add(&e->claims, c);
}

static void add_class(struct env *e, const char *name, const char *provisioner, const char *mode)
{
    json_t *sc = json_pack("{s:s, s:s, s:{s:s}, s:s, s:s, s:s}", "apiVersion", "storage.k8s.io/v1",
                           "kind", "StorageClass", "metadata", "name", name, "provisioner",
                           provisioner, "reclaimPolicy", "Delete", "volumeBindingMode", mode);
    fx_cache_add(&e->classes, sc);
}

#define RWO "[\"ReadWriteOnce\"]"

static void sync_key(struct env *e, const char *key)
{
    struct ck_err err = {0};
    int r = ck_pv_controller_sync(e->c, key, &err);
    if (r < 0)
        fail_msg("sync %s: %s", key, err.msg);
}

/* The last body written with verb to resource, or NULL. */
static const json_t *last(struct env *e, const char *verb, const char *resource)
{
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    for (size_t i = n; i-- > 0;)
        if (strcmp(a[i].verb, verb) == 0 && strcmp(a[i].resource, resource) == 0)
            return a[i].body;
    return NULL;
}

static const char *annotation(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

static const char *at(const json_t *obj, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(obj, a), b));
}

/* Whether an event with reason (and a message containing text, when given) was written. */
static bool event(struct env *e, const char *reason, const char *text)
{
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(a[i].resource, "events") != 0 || !a[i].body)
            continue;
        const char *r = json_string_value(json_object_get(a[i].body, "reason"));
        const char *m = json_string_value(json_object_get(a[i].body, "message"));
        if (r && strcmp(r, reason) == 0 && (!text || (m && strstr(m, text))))
            return true;
    }
    return false;
}

/* The volume the claim's binding chose (from its claimRef write), or NULL. */
static const char *bound_volume(struct env *e)
{
    const json_t *v = last(e, "update", "persistentvolumes");
    return v ? json_string_value(json_object_get(json_object_get(v, "metadata"), "name")) : NULL;
}

static void test_binds_the_smallest_volume_that_fits(void **state)
{
    struct env *e = *state;
    add_volume(e, "small", "1Gi", RWO, "", "Available", "", "");
    add_volume(e, "large", "100Gi", RWO, "", "Available", "", "");
    add_volume(e, "medium", "10Gi", RWO, "", "Available", "", "");
    add_volume(e, "fit-other-class", "5Gi", RWO, "gold", "Available", "", "");
    add_claim(e, "c", "5Gi", RWO, "", "", "");
    sync_key(e, "default/c");
    assert_string_equal(bound_volume(e), "medium");
    const json_t *pv = last(e, "update", "persistentvolumes");
    assert_string_equal(at(json_object_get(pv, "spec"), "claimRef", "uid"), "uid-c");
    assert_string_equal(at(json_object_get(pv, "spec"), "claimRef", "kind"),
                        "PersistentVolumeClaim");
    assert_string_equal(annotation(pv, CK_ANN_BOUND_BY_CONTROLLER), "yes");
    assert_string_equal(at(last(e, "update-status", "persistentvolumes"), "status", "phase"),
                        "Bound");
    const json_t *claim = last(e, "update", "persistentvolumeclaims");
    assert_string_equal(at(claim, "spec", "volumeName"), "medium");
    assert_string_equal(annotation(claim, CK_ANN_BIND_COMPLETED), "yes");
    assert_string_equal(annotation(claim, CK_ANN_BOUND_BY_CONTROLLER), "yes");
    const json_t *status =
        json_object_get(last(e, "update-status", "persistentvolumeclaims"), "status");
    assert_string_equal(json_string_value(json_object_get(status, "phase")), "Bound");
    assert_string_equal(at(status, "capacity", "storage"), "10Gi");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(status, "accessModes"), 0)),
        "ReadWriteOnce");
}

static void test_fewest_access_modes_win_over_size(void **state)
{
    struct env *e = *state;
    /* index.go: volumes are grouped by their modes, the group with fewest modes first */
    add_volume(e, "rwo-rox-small", "1Gi", "[\"ReadWriteOnce\",\"ReadOnlyMany\"]", "", "Available",
               "", "");
    add_volume(e, "rwo-big", "50Gi", RWO, "", "Available", "", "");
    add_volume(e, "rox-only", "1Gi", "[\"ReadOnlyMany\"]", "", "Available", "", "");
    add_claim(e, "c", "1Gi", RWO, "", "", "");
    sync_key(e, "default/c");
    assert_string_equal(bound_volume(e), "rwo-big");

    /* a claim asking for two modes only gets a volume that has both */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "both", "1Gi", "[\"ReadWriteOnce\",\"ReadOnlyMany\"]", "", "", "");
    sync_key(e, "default/both");
    assert_string_equal(bound_volume(e), "rwo-rox-small");
}

static void test_selector_class_and_volume_mode_filter(void **state)
{
    struct env *e = *state;
    add_volume(e, "fast-unlabelled", "1Gi", RWO, "", "Available", "", "");
    add_volume(e, "block", "1Gi", RWO, "", "Available", ",\"volumeMode\":\"Block\"",
               ",\"labels\":{\"tier\":\"fast\"}");
    add_volume(e, "labelled", "2Gi", RWO, "", "Available", "", ",\"labels\":{\"tier\":\"fast\"}");
    add_claim(e, "c", "1Gi", RWO, "", ",\"selector\":{\"matchLabels\":{\"tier\":\"fast\"}}", "");
    sync_key(e, "default/c");
    assert_string_equal(bound_volume(e), "labelled");

    /* a claim of a class with no volumes and no StorageClass object stays unbound */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "gold", "1Gi", RWO, "gold", "", "");
    sync_key(e, "default/gold");
    assert_null(bound_volume(e));
    assert_true(event(e, "ProvisioningFailed", "storageclass.storage.k8s.io \"gold\" not found"));

    /* no class at all and nothing fits: FailedBinding, Pending */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "huge", "1Ti", RWO, "", "", "");
    sync_key(e, "default/huge");
    assert_null(bound_volume(e));
    assert_true(event(e, "FailedBinding", "no storage class is set"));
}

static void test_prebound_volume_and_claim(void **state)
{
    struct env *e = *state;
    /* a volume pre-bound to the claim (no uid) is taken before a smaller free one */
    add_volume(e, "free", "1Gi", RWO, "", "Available", "", "");
    add_volume(e, "reserved", "10Gi", RWO, "", "Available",
               ",\"claimRef\":{\"namespace\":\"default\",\"name\":\"c\"}", "");
    add_claim(e, "c", "1Gi", RWO, "", "", "");
    sync_key(e, "default/c");
    assert_string_equal(bound_volume(e), "reserved");
    const json_t *pv = last(e, "update", "persistentvolumes");
    assert_string_equal(at(json_object_get(pv, "spec"), "claimRef", "uid"), "uid-c");
    assert_null(annotation(pv, CK_ANN_BOUND_BY_CONTROLLER)); /* the user chose it */

    /* a claim naming its volume binds to it, without bound-by-controller on the claim */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "named", "1Gi", RWO, "", ",\"volumeName\":\"free\"", "");
    sync_key(e, "default/named");
    const json_t *claim = last(e, "update", "persistentvolumeclaims");
    assert_non_null(claim);
    assert_string_equal(annotation(claim, CK_ANN_BIND_COMPLETED), "yes");
    assert_null(annotation(claim, CK_ANN_BOUND_BY_CONTROLLER));
    assert_string_equal(
        annotation(last(e, "update", "persistentvolumes"), CK_ANN_BOUND_BY_CONTROLLER), "yes");

    /* naming a volume too small: VolumeMismatch, no binding */
    ck_fake_client_clear_actions(e->fc);
    add_volume(e, "tiny", "1Mi", RWO, "", "Available", "", "");
    add_claim(e, "wants-tiny", "1Gi", RWO, "", ",\"volumeName\":\"tiny\"", "");
    sync_key(e, "default/wants-tiny");
    assert_null(last(e, "update", "persistentvolumes"));
    assert_true(event(e, "VolumeMismatch",
                      "Cannot bind to requested volume \"tiny\": requested PV is too small"));
}

static void test_wait_for_first_consumer_and_provisioning(void **state)
{
    struct env *e = *state;
    add_class(e, "local-path", CK_LOCAL_PATH_PROVISIONER, "WaitForFirstConsumer");
    add_class(e, "csi", "ebs.csi.aws.com", "Immediate");
    add_volume(e, "free", "5Gi", RWO, "local-path", "Available", "", "");
    add_claim(e, "data", "1Gi", RWO, "local-path", "", "");
    sync_key(e, "default/data");
    /* no node chosen yet: nothing is bound or provisioned, even with a volume free */
    assert_null(bound_volume(e));
    assert_null(last(e, "create", "persistentvolumes"));
    assert_true(event(e, "WaitForFirstConsumer",
                      "waiting for first consumer to be created before binding"));

    /* an external provisioner's claim gets the provisioner annotations and an event */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "ext", "1Gi", RWO, "csi", "", "");
    sync_key(e, "default/ext");
    const json_t *claim = last(e, "update", "persistentvolumeclaims");
    assert_string_equal(annotation(claim, CK_ANN_STORAGE_PROVISIONER), "ebs.csi.aws.com");
    assert_string_equal(annotation(claim, CK_ANN_BETA_STORAGE_PROVISION), "ebs.csi.aws.com");
    assert_true(event(e, "ExternalProvisioning", "external provisioner 'ebs.csi.aws.com'"));
    assert_null(last(e, "create", "persistentvolumes"));

    /* once the scheduler picked a node, the local-path provisioner makes the volume there */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "placed", "2Gi", RWO, "local-path", "",
              ",\"annotations\":{\"volume.kubernetes.io/selected-node\":\"node-1\"}");
    sync_key(e, "default/placed");
    const json_t *pv = last(e, "create", "persistentvolumes");
    assert_non_null(pv);
    assert_string_equal(at(pv, "metadata", "name"), "pvc-uid-placed");
    assert_string_equal(annotation(pv, CK_ANN_PROVISIONED_BY), CK_LOCAL_PATH_PROVISIONER);
    const json_t *spec = json_object_get(pv, "spec");
    char want[128];
    snprintf(want, sizeof(want), "%s/pvc-uid-placed_default_placed", e->storage);
    assert_string_equal(at(spec, "hostPath", "path"), want);
    assert_string_equal(at(spec, "hostPath", "type"), "DirectoryOrCreate");
    assert_string_equal(at(spec, "capacity", "storage"), "2Gi");
    assert_string_equal(at(spec, "claimRef", "uid"), "uid-placed");
    assert_string_equal(json_string_value(json_object_get(spec, "persistentVolumeReclaimPolicy")),
                        "Delete");
    assert_string_equal(json_string_value(json_object_get(spec, "storageClassName")), "local-path");
    const json_t *expr = json_array_get(
        json_object_get(
            json_array_get(
                json_object_get(json_object_get(json_object_get(spec, "nodeAffinity"), "required"),
                                "nodeSelectorTerms"),
                0),
            "matchExpressions"),
        0);
    assert_string_equal(json_string_value(json_object_get(expr, "key")), "kubernetes.io/hostname");
    assert_string_equal(json_string_value(json_array_get(json_object_get(expr, "values"), 0)),
                        "node-1");
    assert_true(
        event(e, "ProvisioningSucceeded", "Successfully provisioned volume pvc-uid-placed"));

    /* the provisioned volume is pre-bound: the claim's next sync binds it */
    json_t *made = json_deep_copy(pv); /* before the actions (and pv) go */
    ck_fake_client_clear_actions(e->fc);
    json_object_set_new(made, "status", json_pack("{s:s}", "phase", "Pending"));
    json_object_set_new(json_object_get(made, "metadata"), "uid", json_string("uid-made"));
    json_object_set_new(json_object_get(made, "metadata"), "resourceVersion", json_string("1"));
    fx_cache_add(&e->volumes, made);
    json_t *fresh = NULL; /* the claim as the informer now has it, annotations and all */
    assert_int_equal(ck_ctl_get(&e->client, e->pvc_res, "default", "placed", &fresh, NULL), 0);
    fx_cache_add(&e->claims, fresh);
    sync_key(e, "default/placed");
    assert_string_equal(at(last(e, "update", "persistentvolumeclaims"), "spec", "volumeName"),
                        "pvc-uid-placed");
}

/* A Bound local-path volume with Delete at path whose claim is gone, synced (the fake
   client's actions cleared first). */
static void sync_local_volume(struct env *e, const char *name, const char *path)
{
    char spec[512];
    snprintf(spec, sizeof(spec),
             ",\"claimRef\":{\"namespace\":\"default\",\"name\":\"gone\",\"uid\":\"uid-gone\"},"
             "\"persistentVolumeReclaimPolicy\":\"Delete\",\"hostPath\":{\"path\":\"%s\"}",
             path);
    ck_fake_client_clear_actions(e->fc);
    add_volume(e, name, "1Gi", RWO, "local-path", "Bound", spec,
               ",\"annotations\":{\"pv.kubernetes.io/provisioned-by\":\"rancher.io/local-path\"}");
    sync_key(e, name);
}

static void test_release_and_reclaim(void **state)
{
    struct env *e = *state;
#define REF(policy)                                                                                \
    ",\"claimRef\":{\"namespace\":\"default\",\"name\":\"gone\",\"uid\":\"uid-gone\"},"            \
    "\"persistentVolumeReclaimPolicy\":\"" policy "\""
    add_volume(e, "kept", "1Gi", RWO, "", "Bound", REF("Retain"), "");
    sync_key(e, "kept");
    assert_string_equal(at(last(e, "update-status", "persistentvolumes"), "status", "phase"),
                        "Released");
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 0);

    ck_fake_client_clear_actions(e->fc);
    add_volume(e, "no-plugin", "1Gi", RWO, "", "Bound", REF("Delete"), "");
    sync_key(e, "no-plugin");
    const json_t *status = json_object_get(last(e, "update-status", "persistentvolumes"), "status");
    assert_string_equal(json_string_value(json_object_get(status, "phase")), "Failed");
    assert_true(event(e, "VolumeFailedDelete", "no deletable volume plugin matched"));
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 0);

    ck_fake_client_clear_actions(e->fc);
    add_volume(e, "provisioned", "1Gi", RWO, "local-path", "Bound", REF("Delete"),
               ",\"annotations\":{\"pv.kubernetes.io/provisioned-by\":\"rancher.io/local-path\"}");
    sync_key(e, "provisioned");
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 1);
    assert_string_equal(fx_action(e->fc, "delete", "persistentvolumes", 0)->name, "provisioned");

    /* its directory under the provisioner's goes with it; a link in it to a directory
       outside is removed as a link, what it points at stays */
    char dir[256], outside[256], path[300];
    snprintf(dir, sizeof(dir), "%s/pvc-uid-1_default_data", e->storage);
    snprintf(outside, sizeof(outside), "%s-outside", e->storage);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(mkdir(outside, 0700), 0);
    snprintf(path, sizeof(path), "%s/keep", outside);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/link", dir);
    assert_int_equal(symlink(outside, path), 0);
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    sync_local_volume(e, "pvc-uid-1", dir);
    struct stat st;
    assert_int_equal(lstat(dir, &st), -1);
    snprintf(path, sizeof(path), "%s/keep", outside);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 1);
    /* a directory already gone, or never made on this host: the volume is deleted */
    char p3[300];
    snprintf(p3, sizeof(p3), "%s/pvc-uid-2_d_c", e->storage);
    sync_local_volume(e, "pvc-uid-2", p3);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 1);
    /* a path that is not one the provisioner made under its directory is left alone:
       outside it, through "..", deeper, or named for another volume */
    char other[256];
    snprintf(other, sizeof(other), "%s/pvc-uid-9_d_c", e->storage);
    assert_int_equal(mkdir(other, 0700), 0);
    const char *base = strrchr(e->storage, '/') + 1;
    for (int i = 0; i < 6; i++) {
        char name[32];
        snprintf(name, sizeof(name), "pvc-uid-3%d", i);
        switch (i) {
        case 0:
            snprintf(p3, sizeof(p3), "%s", outside);
            break;
        case 1:
            snprintf(p3, sizeof(p3), "%s/../%s-outside/%s_d_c", e->storage, base, name);
            break;
        case 2:
            snprintf(p3, sizeof(p3), "%s/%s_d_c/keep", e->storage, name);
            break;
        case 3:
            snprintf(p3, sizeof(p3), "%s", other);
            break;
        case 4:
            snprintf(p3, sizeof(p3), "%s/%s", e->storage, name);
            break;
        default:
            snprintf(p3, sizeof(p3), "%sx/%s_d_c", e->storage, name);
            break;
        }
        sync_local_volume(e, name, p3);
        assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 1);
    }
    assert_int_equal(stat(path, &st), 0);  /* outside/keep */
    assert_int_equal(stat(other, &st), 0); /* another volume's */
    /* a directory that cannot be removed (the provisioner's directory is no directory
       now): Failed with VolumeFailedDelete, the volume kept for the next try */
    char aside[128];
    snprintf(aside, sizeof(aside), "%s-aside", e->storage);
    assert_int_equal(rename(e->storage, aside), 0);
    f = fopen(e->storage, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(p3, sizeof(p3), "%s/pvc-uid-4_d_c", e->storage);
    sync_local_volume(e, "pvc-uid-4", p3);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 0);
    assert_string_equal(at(last(e, "update-status", "persistentvolumes"), "status", "phase"),
                        "Failed");
    assert_true(event(e, "VolumeFailedDelete", "failed to delete volume"));
    assert_int_equal(unlink(e->storage), 0);
    assert_int_equal(rename(aside, e->storage), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(outside), 0);

    /* another provisioner's volume is left to it */
    ck_fake_client_clear_actions(e->fc);
    add_volume(e, "external", "1Gi", RWO, "csi", "Bound", REF("Delete"),
               ",\"annotations\":{\"pv.kubernetes.io/provisioned-by\":\"ebs.csi.aws.com\"}");
    sync_key(e, "external");
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pv_res), 0);
    assert_string_equal(at(last(e, "update-status", "persistentvolumes"), "status", "phase"),
                        "Released");
}

static void test_volume_phases_and_lost_claims(void **state)
{
    struct env *e = *state;
    /* a new volume becomes Available; a pre-bound one too, until its claim binds */
    add_volume(e, "new", "1Gi", RWO, "", "Pending", "", "");
    sync_key(e, "new");
    assert_string_equal(at(last(e, "update-status", "persistentvolumes"), "status", "phase"),
                        "Available");
    /* a bound claim whose volume is gone is Lost */
    ck_fake_client_clear_actions(e->fc);
    add_claim(e, "orphan", "1Gi", RWO, "", ",\"volumeName\":\"vanished\"",
              ",\"annotations\":{\"pv.kubernetes.io/bind-completed\":\"yes\"}");
    sync_key(e, "default/orphan");
    assert_string_equal(at(last(e, "update-status", "persistentvolumeclaims"), "status", "phase"),
                        "Lost");
    assert_true(event(e, "ClaimLost", "Bound claim has lost its PersistentVolume"));
    /* a bound claim whose volume names another claim is misbound */
    ck_fake_client_clear_actions(e->fc);
    add_volume(e, "taken", "1Gi", RWO, "", "Bound",
               ",\"claimRef\":{\"namespace\":\"default\",\"name\":\"other\",\"uid\":\"uid-o\"}",
               "");
    add_claim(e, "misbound", "1Gi", RWO, "", ",\"volumeName\":\"taken\"",
              ",\"annotations\":{\"pv.kubernetes.io/bind-completed\":\"yes\"}");
    sync_key(e, "default/misbound");
    assert_true(event(e, "ClaimMisbound", NULL));
    /* a claim deleted while bound queues its volume */
    struct ck_event_handler hv, hc, hs;
    ck_pv_controller_handlers(e->c, &hv, &hc, &hs);
    json_t *deleted = parse("{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"},"
                            "\"spec\":{\"volumeName\":\"taken\"}}");
    hc.on_delete(deleted, NULL, hc.arg);
    json_decref(deleted);
    assert_true(ck_wq_len(ck_pv_controller_queue(e->c)) >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_binds_the_smallest_volume_that_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fewest_access_modes_win_over_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selector_class_and_volume_mode_filter, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prebound_volume_and_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_for_first_consumer_and_provisioning, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_release_and_reclaim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_volume_phases_and_lost_claims, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
