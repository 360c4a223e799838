/*
 * test_storage.c - tests for the storage kinds of lib/api/kinds/
 * (storageclass.c, persistentvolume.c, csidriver.c, csinode.c,
 * volumeattachment.c, csistoragecapacity.c): schema defaults, validation and
 * immutability with Kubernetes' messages, the phase a create starts in, and
 * the table cells kubectl prints.
 */
#include "cktest.h"

#include "kindtest.h"

#define NOW 1800000000LL

static void test_storageclass_defaults_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("storage.k8s.io", "storageclasses");
    assert_false(k->namespaced);
    assert_string_equal(k->short_names[0], "sc");
    json_t *sc = load("{\"metadata\":{\"name\":\"standard\",\"annotations\":{\"storageclass."
                      "kubernetes.io/is-default-class\":\"true\"}},\"provisioner\":\"rancher.io/"
                      "local-path\"}");
    kt_default(k, sc);
    assert_string_equal(json_string_value(json_object_get(sc, "reclaimPolicy")), "Delete");
    assert_string_equal(json_string_value(json_object_get(sc, "volumeBindingMode")), "Immediate");
    kt_expect(k, sc, NULL, NULL);
    static const struct kt_cell_want sc_cells[] = {
        {"Name", "standard (default)"},    {"Provisioner", "rancher.io/local-path"},
        {"ReclaimPolicy", "Delete"},       {"VolumeBindingMode", "Immediate"},
        {"AllowVolumeExpansion", "false"}, {NULL, NULL},
    };
    kt_expect_cells(k, sc, sc_cells);
    json_object_set_new(json_object_get(json_object_get(sc, "metadata"), "annotations"),
                        "storageclass.kubernetes.io/is-default-class", json_string("false"));
    kt_expect_cell(k, sc, "Name", "standard");
    json_decref(sc);
}

static void test_storageclass_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("storage.k8s.io", "storageclasses");
    json_t *sc = load("{\"metadata\":{\"name\":\"x\"},\"reclaimPolicy\":\"Recycle\","
                      "\"volumeBindingMode\":\"Later\",\"parameters\":{\"\":\"v\"}}");
    static const char *const sc_errors[] = {
        "provisioner: Required value",
        "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", "
        "\"Retain\"",
        "volumeBindingMode: Unsupported value: \"Later\"",
        "parameters: Invalid value: \"\": field can not be empty.",
        NULL,
    };
    kt_expect_all(k, sc, NULL, sc_errors);
    json_decref(sc);
    sc = load("{\"metadata\":{\"name\":\"x\"},\"provisioner\":\"bad provisioner!\","
              "\"volumeBindingMode\":\"Immediate\"}");
    kt_expect(k, sc, NULL, "provisioner: Invalid value: \"bad provisioner!\"");
    json_decref(sc);

    json_t *old = load("{\"metadata\":{\"name\":\"x\"},\"provisioner\":\"a.io/p\",\"parameters\":"
                       "{\"type\":\"ssd\"},\"reclaimPolicy\":\"Delete\",\"volumeBindingMode\":"
                       "\"Immediate\"}");
    json_t *same = json_deep_copy(old);
    json_object_set_new(same, "allowVolumeExpansion", json_true());
    kt_expect(k, same, old, NULL);
    json_t *changed = load("{\"metadata\":{\"name\":\"x\"},\"provisioner\":\"b.io/p\","
                           "\"parameters\":{\"type\":\"hdd\"},\"reclaimPolicy\":\"Retain\","
                           "\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    static const char *const changed_errors[] = {
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
        "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
        "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
        NULL,
    };
    kt_expect_all(k, changed, old, changed_errors);
    json_decref(old);
    json_decref(same);
    json_decref(changed);
}

static json_t *pv(const char *spec)
{
    return json_pack("{s:{s:s}, s:o}", "metadata", "name", "pv1", "spec", load(spec));
}

static void test_persistentvolume_create(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("", "persistentvolumes");
    assert_false(k->namespaced);
    assert_string_equal(k->short_names[0], "pv");
    assert_non_null(ck_kind_subresource(k, "status"));
    json_t *o = pv("{\"capacity\":{\"storage\":\"10Gi\"},\"accessModes\":[\"ReadWriteOnce\","
                   "\"ReadOnlyMany\"],\"hostPath\":{\"path\":\"/data\"},\"storageClassName\":"
                   "\"manual\",\"claimRef\":{\"namespace\":\"default\",\"name\":\"data\"}}");
    json_object_set_new(o, "status", json_pack("{s:s}", "phase", "Bound"));
    kt_default(k, o);
    const json_t *spec = json_object_get(o, "spec");
    assert_string_equal(json_string_value(json_object_get(spec, "persistentVolumeReclaimPolicy")),
                        "Retain");
    assert_string_equal(json_string_value(json_object_get(spec, "volumeMode")), "Filesystem");
    struct ck_err err = {0};
    assert_int_equal(ck_meta_prepare_create(k, o, NULL, NOW, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")),
                        "Pending");
    kt_expect(k, o, NULL, NULL);
    static const struct kt_cell_want o_cells[] = {
        {"Capacity", "10Gi"},
        {"Access Modes", "RWO,ROX"},
        {"Reclaim Policy", "Retain"},
        {"Status", "Pending"},
        {"Claim", "default/data"},
        {"StorageClass", "manual"},
        {"VolumeAttributesClass", "<unset>"},
        {"Reason", ""},
        {"VolumeMode", "Filesystem"},
        {NULL, NULL},
    };
    kt_expect_cells(k, o, o_cells);
    json_object_set_new(json_object_get(o, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    kt_expect_cell(k, o, "Status", "Terminating"); /* as kubectl prints a volume going */
    json_decref(o);
}

static void test_persistentvolume_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("", "persistentvolumes");
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"{\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{\"path\":\"/d\"}}",
         "spec.capacity: Required value"},
        {"{\"capacity\":{\"storage\":\"0\"},\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{"
         "\"path\":\"/d\"}}",
         "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"},
        {"{\"capacity\":{\"storage\":\"1Gi\",\"cpu\":\"1\"},\"accessModes\":[\"ReadWriteOnce\"],"
         "\"hostPath\":{\"path\":\"/d\"}}",
         "spec.capacity: Unsupported value"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"hostPath\":{\"path\":\"/d\"}}",
         "spec.accessModes: Required value"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"WriteSometimes\"],\"hostPath\":{"
         "\"path\":\"/d\"}}",
         "spec.accessModes: Unsupported value: \"WriteSometimes\""},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOncePod\","
         "\"ReadOnlyMany\"],\"hostPath\":{\"path\":\"/d\"}}",
         "may not use ReadWriteOncePod with other access modes"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"]}",
         "spec: Required value: must specify a volume type"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{"
         "\"path\":\"/d\"},\"nfs\":{\"server\":\"s\",\"path\":\"/e\"}}",
         "spec.nfs: Forbidden: may not specify more than 1 volume type"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"local\":{"
         "\"path\":\"/d\"}}",
         "spec.nodeAffinity: Required value"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"csi\":{"
         "\"driver\":\"d\"}}",
         "spec.csi.volumeHandle: Required value"},
        {"{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{"
         "\"path\":\"/d\"},\"persistentVolumeReclaimPolicy\":\"Keep\"}",
         "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = pv(cases[i].spec);
        kt_expect(k, o, NULL, cases[i].want);
        json_decref(o);
    }
}

static void test_csidriver_defaults_validation_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("storage.k8s.io", "csidrivers");
    assert_false(k->namespaced);
    json_t *d = load("{\"metadata\":{\"name\":\"hostpath.csi.k8s.io\"},\"spec\":{}}");
    kt_default(k, d);
    const json_t *spec = json_object_get(d, "spec");
    assert_true(json_is_true(json_object_get(spec, "attachRequired")));
    assert_true(json_is_false(json_object_get(spec, "podInfoOnMount")));
    assert_true(json_is_false(json_object_get(spec, "storageCapacity")));
    assert_true(json_is_false(json_object_get(spec, "requiresRepublish")));
    assert_true(json_is_false(json_object_get(spec, "seLinuxMount")));
    assert_string_equal(json_string_value(json_object_get(spec, "fsGroupPolicy")),
                        "ReadWriteOnceWithFSType");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(spec, "volumeLifecycleModes"), 0)),
        "Persistent");
    kt_expect(k, d, NULL, NULL);
    static const struct kt_cell_want d_cells[] = {
        {"AttachRequired", "true"},
        {"PodInfoOnMount", "false"},
        {"TokenRequests", "<unset>"},
        {"Modes", "Persistent"},
        {NULL, NULL},
    };
    kt_expect_cells(k, d, d_cells);

    json_t *bad = json_deep_copy(d);
    json_t *bs = json_object_get(bad, "spec");
    json_object_del(bs, "attachRequired");
    json_object_set_new(bs, "fsGroupPolicy", json_string("Sometimes"));
    json_object_set_new(bs, "volumeLifecycleModes", json_pack("[s]", "Forever"));
    json_object_set_new(
        bs, "tokenRequests",
        json_pack("[{s:s,s:i},{s:s}]", "audience", "a", "expirationSeconds", 60, "audience", "a"));
    static const char *const bad_errors[] = {
        "spec.attachedRequired: Required value",
        "spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", "
        "\"None\", \"ReadWriteOnceWithFSType\"",
        "spec.volumeLifecycleModes: Unsupported value: \"Forever\"",
        "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a "
        "duration less than 10 minutes",
        "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
        NULL,
    };
    kt_expect_all(k, bad, NULL, bad_errors);
    kt_expect_cell(k, bad, "TokenRequests", "a,a");
    json_decref(bad);

    json_t *changed = json_deep_copy(d);
    json_object_set_new(json_object_get(changed, "spec"), "attachRequired", json_false());
    json_object_set_new(json_object_get(changed, "spec"), "podInfoOnMount", json_true());
    kt_expect(k, changed, d, "spec.attachedRequired: Invalid value: false: field is immutable");
    json_object_set_new(json_object_get(changed, "spec"), "attachRequired", json_true());
    kt_expect(k, changed, d, NULL);
    json_decref(changed);
    json_decref(d);
}

static void test_csinode_validation_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("storage.k8s.io", "csinodes");
    json_t *n = load("{\"metadata\":{\"name\":\"node-1\"},\"spec\":{\"drivers\":[{\"name\":"
                     "\"a.csi.io\",\"nodeID\":\"n1\",\"topologyKeys\":[\"zone\"]},{\"name\":"
                     "\"b.csi.io\",\"nodeID\":\"n1\"}]}}");
    kt_expect(k, n, NULL, NULL);
    kt_expect_cell(k, n, "Drivers", "2");
    json_t *bad = load("{\"metadata\":{\"name\":\"node-1\"},\"spec\":{\"drivers\":[{\"name\":"
                       "\"a.csi.io\",\"nodeID\":\"\",\"allocatable\":{\"count\":-1},"
                       "\"topologyKeys\":[\"z\",\"z\"]},{\"name\":\"a.csi.io\",\"nodeID\":\"n\"},"
                       "{\"name\":\"Not_A_Name\",\"nodeID\":\"n\"}]}}");
    static const char *const bad_errors[] = {
        "spec.drivers[0].nodeID: Required value",
        "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or "
        "equal to 0",
        "spec.drivers[0]: Duplicate value: \"z\"",
        "spec.drivers[1].name: Duplicate value: \"a.csi.io\"",
        "spec.drivers[2].name: Invalid value: \"Not_A_Name\"",
        NULL,
    };
    kt_expect_all(k, bad, NULL, bad_errors);
    json_t *changed = json_deep_copy(n);
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(changed, "spec"), "drivers"), 0), "nodeID",
        json_string("n2"));
    kt_expect(k, changed, n, "spec.drivers: Invalid value:");
    json_array_remove(json_object_get(json_object_get(changed, "spec"), "drivers"), 0);
    kt_expect(k, changed, n, NULL); /* a driver may go away */
    json_decref(changed);
    json_decref(bad);
    json_decref(n);
}

static void test_volumeattachment_validation_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("storage.k8s.io", "volumeattachments");
    assert_non_null(ck_kind_subresource(k, "status"));
    json_t *va = load("{\"metadata\":{\"name\":\"va\"},\"spec\":{\"attacher\":\"a.csi.io\","
                      "\"source\":{\"persistentVolumeName\":\"pv-1\"},\"nodeName\":\"node-1\"}}");
    kt_expect(k, va, NULL, NULL);
    static const struct kt_cell_want va_cells[] = {
        {"Attacher", "a.csi.io"}, {"PV", "pv-1"}, {"Node", "node-1"},
        {"Attached", "false"},    {NULL, NULL},
    };
    kt_expect_cells(k, va, va_cells);
    json_t *changed = json_deep_copy(va);
    json_object_set_new(json_object_get(changed, "spec"), "nodeName", json_string("node-2"));
    static const char *const changed_errors[] = {
        "spec: Invalid value:",
        "field is immutable",
        NULL,
    };
    kt_expect_all(k, changed, va, changed_errors);
    json_decref(changed);
    json_t *bad = load("{\"metadata\":{\"name\":\"va\"},\"spec\":{\"attacher\":\"\","
                       "\"source\":{},\"nodeName\":\"Node_1\"}}");
    static const char *const bad_errors[] = {
        "spec.attacher: Required value",
        "spec.source: Required value: must specify exactly one of inlineVolumeSpec and "
        "persistentVolumeName",
        "spec.nodeName: Invalid value: \"Node_1\"",
        NULL,
    };
    kt_expect_all(k, bad, NULL, bad_errors);
    json_decref(bad);
    json_decref(va);
}

static void test_csistoragecapacity_validation_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("storage.k8s.io", "csistoragecapacities");
    assert_true(k->namespaced);
    json_t *c = load("{\"metadata\":{\"name\":\"c\",\"namespace\":\"default\"},"
                     "\"storageClassName\":\"fast\",\"nodeTopology\":{\"matchLabels\":{\"zone\":"
                     "\"a\"}}}");
    kt_expect(k, c, NULL, NULL);
    static const struct kt_cell_want c_cells[] = {
        {"StorageClassName", "fast"},
        {"Capacity", "<unset>"},
        {NULL, NULL},
    };
    kt_expect_cells(k, c, c_cells);
    json_object_set_new(c, "capacity", json_string("10Gi"));
    kt_expect_cell(k, c, "Capacity", "10Gi");
    json_t *changed = json_deep_copy(c);
    json_object_set_new(changed, "storageClassName", json_string("slow"));
    json_object_set_new(changed, "capacity", json_string("-1"));
    static const char *const changed_errors[] = {
        "storageClassName: Invalid value: \"slow\": field is immutable",
        "capacity: Invalid value: \"-1\": must be greater than or equal to 0",
        NULL,
    };
    kt_expect_all(k, changed, c, changed_errors);
    json_decref(changed);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storageclass_defaults_and_cells),
        cmocka_unit_test(test_storageclass_validation),
        cmocka_unit_test(test_persistentvolume_create),
        cmocka_unit_test(test_persistentvolume_validation),
        cmocka_unit_test(test_csidriver_defaults_validation_and_cells),
        cmocka_unit_test(test_csinode_validation_and_cells),
        cmocka_unit_test(test_volumeattachment_validation_and_cells),
        cmocka_unit_test(test_csistoragecapacity_validation_and_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
