/*
 * persistentvolume.c - the persistentvolume-binder controller (kubernetes
 * pkg/controller/volume/persistentvolume: pv_controller.go, index.go and
 * component-helpers' storage/volume FindMatchingVolume).
 *
 * One queue carries both kinds of keys: a claim's is "namespace/name", a
 * volume's is its name alone (names of cluster objects have no slash), so one
 * runner serves Kubernetes' claimQueue and volumeQueue.
 *
 * syncClaim: a claim without pv.kubernetes.io/bind-completed is unbound. With
 * no spec.volumeName it takes the best volume: a volume pre-bound to it
 * (claimRef naming it) first, else among Available volumes of its class whose
 * access modes include the claim's, with enough storage, the same volumeMode
 * and labels its selector matches, the smallest of those with the fewest
 * access modes (index.go's findByClaim); a claim whose class binds
 * WaitForFirstConsumer only takes a pre-bound volume. Without a volume the
 * claim stays Pending: WaitForFirstConsumer (no selected node yet), or the
 * class's provisioner is written into volume.kubernetes.io/storage-provisioner
 * (and the beta annotation) with an ExternalProvisioning event, or, with no
 * class, FailedBinding. Binding writes the volume's claimRef (and
 * bound-by-controller when the controller chose it), the volume's Bound phase,
 * the claim's volumeName with bind-completed (and bound-by-controller), then
 * the claim's status (Bound, the volume's access modes and capacity). With a
 * spec.volumeName the claim binds to that volume if it is free and fits
 * (else a VolumeMismatch event), or finishes the binding the volume already
 * points at. A bound claim whose volume is gone or bound elsewhere is Lost
 * (ClaimLost, ClaimMisbound).
 *
 * syncVolume: a volume without a claimRef, or pre-bound without a uid, is
 * Available; bound to a claim that is gone (checked against the server, not
 * only the cache) it is Released and reclaimed: Retain keeps it, Delete of a
 * volume the built-in local-path provisioner made removes its directory (one
 * the provisioner made under its own directory, never through a symlink out
 * of it; VolumeFailedDelete and phase Failed, retried, when that fails) and
 * deletes the volume, Delete of a
 * volume another provisioner made waits for that provisioner, Delete of any
 * other volume and Recycle fail (VolumeFailedDelete, VolumeFailedRecycle: no
 * volume plugins run here). A volume bound to a claim that chose another
 * volume is unbound (when the controller bound it) or, dynamically
 * provisioned with Delete, released.
 *
 * The built-in local-path provisioner (k3s's rancher.io/local-path, here in
 * the controller as Kubernetes' in-tree provisioners were): a claim of a class
 * with that provisioner and a selected node gets a hostPath volume
 * pvc-<claim uid> at <dir>/pvc-<uid>_<namespace>_<name>, <dir> the class's
 * nodePath parameter or the controller's directory (DirectoryOrCreate: the
 * node makes the directory when it mounts it), with node affinity to the
 * selected node, the class's reclaim policy and mount options, pre-bound to the
 * claim; the Provisioning and ProvisioningSucceeded events are the external
 * provisioner library's.
 *
 * Threading: the runner syncs a key on one worker at a time; handlers run on
 * the informers' threads; the controller's state is read-only after creation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/persistentvolume.h"

struct ck_pv_controller {
    struct ck_ctl_client client;
    struct ck_lister volumes, claims, classes;
    const struct ck_resource *volumes_res, *claims_res;
    struct ck_informer *infs[3];
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    char *local_path_dir;
};

/* ---- helpers on objects -------------------------------------------------------------- */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = ck__vformat(f, ap);
    va_end(ap);
    return s;
}

static const char *ann(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

static bool has_ann(const json_t *obj, const char *key)
{
    return json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), key) !=
           NULL;
}

static int set_ann(json_t *obj, const char *key, const char *value)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_t *a = json_object_get(meta, "annotations");
    if (!json_is_object(a)) {
        a = json_object();
        if (!a || json_object_set_new(meta, "annotations", a) < 0)
            return CK_ENOMEM;
    }
    return json_object_set_new(a, key, json_string(value)) < 0 ? CK_ENOMEM : 0;
}

static const char *spec_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(obj, "spec"), key));
}

static const char *phase_of(const json_t *obj)
{
    const char *p = json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
    return p ? p : "";
}

/* GetPersistentVolumeClaimClass / GetPersistentVolumeClass: the beta annotation, else spec. */
static const char *class_of(const json_t *obj)
{
    const char *a = ann(obj, CK_ANN_BETA_STORAGE_CLASS);
    if (a)
        return a;
    const char *s = spec_str(obj, "storageClassName");
    return s ? s : "";
}

static const char *volume_mode(const json_t *obj)
{
    const char *m = spec_str(obj, "volumeMode");
    return m ? m : "Filesystem";
}

static bool deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

/* The access modes as bits, in Kubernetes' order. */
static unsigned modes_of(const json_t *modes)
{
    static const char *const names[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                        "ReadWriteOncePod"};
    unsigned bits = 0;
    size_t i;
    const json_t *m;
    json_array_foreach(modes, i, m)
    {
        for (unsigned b = 0; b < 4; b++)
            if (json_string_value(m) && strcmp(json_string_value(m), names[b]) == 0)
                bits |= 1u << b;
    }
    return bits;
}

static int popcount(unsigned v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* A storage quantity in milli-units; -1 when absent or not a quantity. */
static int64_t storage_of(const json_t *resources)
{
    int64_t milli = 0;
    const char *q = json_string_value(json_object_get(resources, "storage"));
    return q && ck_quantity_milli(q, &milli) == 0 ? milli : -1;
}

static int64_t requested(const json_t *claim)
{
    int64_t r = storage_of(
        json_object_get(json_object_get(json_object_get(claim, "spec"), "resources"), "requests"));
    return r < 0 ? 0 : r;
}

static int64_t capacity(const json_t *volume)
{
    return storage_of(json_object_get(json_object_get(volume, "spec"), "capacity"));
}

static const json_t *claim_ref(const json_t *volume)
{
    const json_t *r = json_object_get(json_object_get(volume, "spec"), "claimRef");
    return json_is_object(r) ? r : NULL;
}

static const char *ref_str(const json_t *ref, const char *key)
{
    const char *s = json_string_value(json_object_get(ref, key));
    return s ? s : "";
}

static const char *meta(const json_t *obj, const char *key)
{
    const char *s = ck__meta_str(obj, key);
    return s ? s : "";
}

/* IsVolumeBoundToClaim: the claimRef names the claim (and its uid, when it has one). */
static bool bound_to_claim(const json_t *volume, const json_t *claim)
{
    const json_t *ref = claim_ref(volume);
    if (!ref || strcmp(ref_str(ref, "name"), meta(claim, "name")) != 0 ||
        strcmp(ref_str(ref, "namespace"), meta(claim, "namespace")) != 0)
        return false;
    return !*ref_str(ref, "uid") || strcmp(ref_str(ref, "uid"), meta(claim, "uid")) == 0;
}

static bool same_string(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* ---- matching (FindMatchingVolume over index.go's access-mode groups) ------------------- */

/*
 * The volume for an unbound claim without a volumeName, a new reference (ck_cached_unref)
 * or NULL. delay: the class binds WaitForFirstConsumer, so only a pre-bound volume counts.
 */
static const json_t *find_best_match(struct ck_pv_controller *c, const json_t *claim, bool delay)
{
    struct ck_obj_list all = {0};
    if (ck_lister_list(&c->volumes, "", NULL, &all, NULL) < 0)
        return NULL;
    struct ck_label_selector *sel = NULL;
    const json_t *sel_obj = json_object_get(json_object_get(claim, "spec"), "selector");
    if (sel_obj && ck_label_selector_from_object(sel_obj, &sel, NULL) < 0) {
        ck_obj_list_release(&all);
        return NULL; /* a selector that does not parse matches nothing */
    }
    unsigned want = modes_of(json_object_get(json_object_get(claim, "spec"), "accessModes"));
    int64_t need = requested(claim);
    const char *cls = class_of(claim);
    const json_t *best[5] = {0}, *found = NULL;
    for (size_t i = 0; i < all.n && !found; i++) {
        const json_t *v = all.items[i];
        unsigned have = modes_of(json_object_get(json_object_get(v, "spec"), "accessModes"));
        if ((have & want) != want || have == 0)
            continue; /* index.go only looks among volumes with every mode asked for */
        if (!same_string(spec_str(v, "volumeAttributesClassName"),
                         spec_str(claim, "volumeAttributesClassName")))
            continue;
        int64_t size = capacity(v);
        if (size < need || strcmp(volume_mode(v), volume_mode(claim)) != 0 || deleting(v))
            continue;
        if (bound_to_claim(v, claim)) {
            found = v; /* a pre-bound volume wins at once */
            break;
        }
        if (delay)
            continue; /* the scheduler's choice of a node decides */
        if (strcmp(phase_of(v), "Available") != 0 || claim_ref(v))
            continue;
        if (sel && !ck_label_selector_matches(
                       sel, json_object_get(json_object_get(v, "metadata"), "labels")))
            continue;
        if (strcmp(class_of(v), cls) != 0)
            continue;
        int g = popcount(have);
        if (!best[g] || capacity(best[g]) > size)
            best[g] = v;
    }
    for (int g = 1; g <= 4 && !found; g++)
        found = best[g];
    if (found)
        ck_cached_ref(found);
    ck_label_selector_free(sel);
    ck_obj_list_release(&all);
    return found;
}

/* checkVolumeSatisfyClaim: NULL when volume can serve claim, else why not. */
static const char *check_satisfies(const json_t *volume, const json_t *claim)
{
    if (deleting(volume))
        return "the volume is marked for deletion";
    if (capacity(volume) < requested(claim))
        return "requested PV is too small";
    if (strcmp(class_of(volume), class_of(claim)) != 0)
        return "storageClassName does not match";
    if (strcmp(volume_mode(volume), volume_mode(claim)) != 0)
        return "incompatible volumeMode";
    unsigned want = modes_of(json_object_get(json_object_get(claim, "spec"), "accessModes"));
    unsigned have = modes_of(json_object_get(json_object_get(volume, "spec"), "accessModes"));
    if ((have & want) != want)
        return "incompatible accessMode";
    return NULL;
}

/* ---- writes ------------------------------------------------------------------------- */

static void now_text(char *buf, size_t size)
{
    ck__time_format((int64_t)time(NULL), -1, buf, size);
}

/*
 * updateVolumePhase(WithEvent): writes phase (and message, NULL: none) through the status
 * subresource unless the volume has them; the event only with a change. *io is replaced by
 * the written volume (a new json reference the caller drops).
 */
static int volume_phase(struct ck_pv_controller *c, json_t **io, const char *phase,
                        const char *message, const char *event_type, const char *reason,
                        struct ck_err *reterr)
{
    json_t *v = *io;
    const char *was = json_string_value(json_object_get(json_object_get(v, "status"), "message"));
    if (strcmp(phase_of(v), phase) == 0 && same_string(was, message))
        return 0;
    bool changed = strcmp(phase_of(v), phase) != 0;
    json_t *copy = json_deep_copy(v);
    json_t *status = json_object_get(copy, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(copy, "status", status);
    }
    json_object_set_new(status, "phase", json_string(phase));
    if (message)
        json_object_set_new(status, "message", json_string(message));
    else
        json_object_del(status, "message");
    if (changed) {
        char t[CK__TIME_LEN];
        now_text(t, sizeof(t));
        json_object_set_new(status, "lastPhaseTransitionTime", json_string(t));
    }
    json_t *out = NULL;
    int r = ck_ctl_update_status(&c->client, c->volumes_res, "", copy, &out, reterr);
    json_decref(copy);
    if (r < 0)
        return r;
    if (changed && event_type)
        ck_event_recordf(c->recorder, out ? out : v, event_type, reason, "%s", message);
    if (out) {
        json_decref(*io);
        *io = out;
    }
    return 0;
}

/*
 * updateClaimStatus(WithEvent): phase, and the volume's access modes and capacity (volume
 * NULL: none); the event only when the phase changes. *io as for volume_phase.
 */
static int claim_status(struct ck_pv_controller *c, json_t **io, const char *phase,
                        const json_t *volume, const char *event_type, const char *reason,
                        const char *message, struct ck_err *reterr)
{
    json_t *claim = *io;
    json_t *copy = json_deep_copy(claim);
    json_t *status = json_object_get(copy, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(copy, "status", status);
    }
    json_object_set_new(status, "phase", json_string(phase));
    const json_t *vspec = json_object_get(volume, "spec");
    if (volume) {
        json_object_set(status, "accessModes", json_object_get(vspec, "accessModes"));
        json_object_set(status, "capacity", json_object_get(vspec, "capacity"));
    } else {
        json_object_del(status, "accessModes");
        json_object_del(status, "capacity");
    }
    bool changed = strcmp(phase_of(claim), phase) != 0;
    const json_t *old_status = json_object_get(claim, "status");
    int r = 0;
    if (!json_equal(old_status ? old_status : json_null(), status)) {
        json_t *out = NULL;
        r = ck_ctl_update_status(&c->client, c->claims_res, meta(claim, "namespace"), copy, &out,
                                 reterr);
        if (r == 0 && out) {
            json_decref(*io);
            *io = out;
        }
    }
    json_decref(copy);
    if (r == 0 && changed && event_type)
        ck_event_recordf(c->recorder, *io, event_type, reason, "%s", message);
    return r;
}

static json_t *reference_to(const json_t *claim)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", "PersistentVolumeClaim", "namespace",
                     meta(claim, "namespace"), "name", meta(claim, "name"), "uid",
                     meta(claim, "uid"), "apiVersion", "v1", "resourceVersion",
                     meta(claim, "resourceVersion"));
}

/* bind(): volume's claimRef, volume Bound, claim's volumeName, claim Bound. */
static int bind(struct ck_pv_controller *c, const json_t *cached_volume, const json_t *cached_claim,
                struct ck_err *reterr)
{
    json_t *volume = json_deep_copy(cached_volume), *claim = json_deep_copy(cached_claim);
    int r = 0;
    const json_t *ref = claim_ref(volume);
    bool by_controller = !bound_to_claim(volume, claim);
    bool dirty = false;
    if (!ref || strcmp(ref_str(ref, "name"), meta(claim, "name")) != 0 ||
        strcmp(ref_str(ref, "namespace"), meta(claim, "namespace")) != 0 ||
        strcmp(ref_str(ref, "uid"), meta(claim, "uid")) != 0) {
        json_object_set_new(json_object_get(volume, "spec"), "claimRef", reference_to(claim));
        dirty = true;
    }
    if (by_controller && !has_ann(volume, CK_ANN_BOUND_BY_CONTROLLER)) {
        set_ann(volume, CK_ANN_BOUND_BY_CONTROLLER, "yes");
        dirty = true;
    }
    if (dirty) {
        json_t *out = NULL;
        r = ck_ctl_update(&c->client, c->volumes_res, "", volume, &out, reterr);
        if (r < 0)
            goto out;
        if (out) {
            json_decref(volume);
            volume = out;
        }
    }
    if ((r = volume_phase(c, &volume, "Bound", NULL, NULL, NULL, reterr)) < 0)
        goto out;
    dirty = false;
    if (!same_string(spec_str(claim, "volumeName"), meta(volume, "name"))) {
        json_object_set_new(json_object_get(claim, "spec"), "volumeName",
                            json_string(meta(volume, "name")));
        if (!has_ann(claim, CK_ANN_BOUND_BY_CONTROLLER))
            set_ann(claim, CK_ANN_BOUND_BY_CONTROLLER, "yes");
        dirty = true;
    }
    if (!has_ann(claim, CK_ANN_BIND_COMPLETED)) {
        set_ann(claim, CK_ANN_BIND_COMPLETED, "yes");
        dirty = true;
    }
    if (dirty) {
        json_t *out = NULL;
        r = ck_ctl_update(&c->client, c->claims_res, meta(claim, "namespace"), claim, &out, reterr);
        if (r < 0)
            goto out;
        if (out) {
            json_decref(claim);
            claim = out;
        }
    }
    r = claim_status(c, &claim, "Bound", volume, NULL, NULL, NULL, reterr);
    if (r == 0)
        CK_LOGV(4, "persistentvolume-binder: claim %s/%s bound to volume %s",
                meta(claim, "namespace"), meta(claim, "name"), meta(volume, "name"));
out:
    json_decref(volume);
    json_decref(claim);
    return r;
}

/* ---- the built-in local-path provisioner -------------------------------------------- */

static int provision_local_path(struct ck_pv_controller *c, const json_t *claim,
                                const json_t *class, struct ck_err *reterr)
{
    const char *node = ann(claim, CK_ANN_SELECTED_NODE);
    if (!node || !*node)
        return 0; /* WaitForFirstConsumer: the scheduler picks the node first */
    char name[128];
    snprintf(name, sizeof(name), "pvc-%s", meta(claim, "uid"));
    const json_t *existing = NULL;
    if (ck_lister_get(&c->volumes, "", name, &existing) == 0) {
        ck_cached_unref(existing);
        return 0;
    }
    ck_event_recordf(c->recorder, claim, CK_EVENT_NORMAL, "Provisioning",
                     "External provisioner is provisioning volume for claim \"%s/%s\"",
                     meta(claim, "namespace"), meta(claim, "name"));
    const char *dir =
        json_string_value(json_object_get(json_object_get(class, "parameters"), "nodePath"));
    char *path = fmt("%s/%s_%s_%s", dir && *dir ? dir : c->local_path_dir, name,
                     meta(claim, "namespace"), meta(claim, "name"));
    const json_t *request = json_object_get(
        json_object_get(json_object_get(json_object_get(claim, "spec"), "resources"), "requests"),
        "storage");
    const char *reclaim = json_string_value(json_object_get(class, "reclaimPolicy"));
    json_t *pv = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{s:{s:O}, s:O, s:s, s:s, s:s, s:o, s:{s:s, s:s},"
        " s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}}",
        "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", name, "annotations",
        CK_ANN_PROVISIONED_BY, CK_LOCAL_PATH_PROVISIONER, "local.path.provisioner/selected-node",
        node, "spec", "capacity", "storage", request ? (json_t *)request : json_string("0"),
        "accessModes", json_object_get(json_object_get(claim, "spec"), "accessModes"),
        "persistentVolumeReclaimPolicy", reclaim ? reclaim : "Delete", "storageClassName",
        meta(class, "name"), "volumeMode", volume_mode(claim), "claimRef", reference_to(claim),
        "hostPath", "path", path ? path : "", "type", "DirectoryOrCreate", "nodeAffinity",
        "required", "nodeSelectorTerms", "matchExpressions", "key", "kubernetes.io/hostname",
        "operator", "In", "values", node);
    free(path);
    if (!pv)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const json_t *mount = json_object_get(class, "mountOptions");
    if (json_array_size(mount))
        json_object_set(json_object_get(pv, "spec"), "mountOptions", (json_t *)mount);
    int r = ck_ctl_create(&c->client, c->volumes_res, "", pv, NULL, reterr);
    json_decref(pv);
    if (r == CK_EEXIST) {
        ck_err_release(reterr);
        return 0;
    }
    if (r < 0) {
        ck_event_recordf(c->recorder, claim, CK_EVENT_WARNING, "ProvisioningFailed",
                         "failed to provision volume with StorageClass \"%s\": %s",
                         meta(class, "name"), reterr ? reterr->msg : "");
        return r;
    }
    ck_event_recordf(c->recorder, claim, CK_EVENT_NORMAL, "ProvisioningSucceeded",
                     "Successfully provisioned volume %s", name);
    return 0;
}

/* provisionClaim for an external provisioner: the annotations and the event. */
static int provision(struct ck_pv_controller *c, const json_t *cached_claim, struct ck_err *reterr)
{
    const char *cls = class_of(cached_claim);
    const json_t *class = NULL;
    if (ck_lister_get(&c->classes, "", cls, &class) < 0) {
        /* as Kubernetes: no error, the class's arrival queues the claim again */
        ck_event_recordf(c->recorder, cached_claim, CK_EVENT_WARNING, "ProvisioningFailed",
                         "storageclass.storage.k8s.io \"%s\" not found", cls);
        return 0;
    }
    const char *provisioner = json_string_value(json_object_get(class, "provisioner"));
    if (!provisioner)
        provisioner = "";
    int r = 0;
    json_t *claim = json_deep_copy(cached_claim);
    if (!same_string(ann(claim, CK_ANN_STORAGE_PROVISIONER), provisioner) ||
        !same_string(ann(claim, CK_ANN_BETA_STORAGE_PROVISION), provisioner)) {
        set_ann(claim, CK_ANN_BETA_STORAGE_PROVISION, provisioner);
        set_ann(claim, CK_ANN_STORAGE_PROVISIONER, provisioner);
        json_t *out = NULL;
        r = ck_ctl_update(&c->client, c->claims_res, meta(claim, "namespace"), claim, &out, reterr);
        if (out) {
            json_decref(claim);
            claim = out;
        }
    }
    if (r == 0) {
        ck_event_recordf(c->recorder, claim, CK_EVENT_NORMAL, "ExternalProvisioning",
                         "Waiting for a volume to be created either by the external provisioner "
                         "'%s' or manually by the system administrator. If volume creation is "
                         "delayed, please verify that the provisioner is running and correctly "
                         "registered.",
                         provisioner);
        if (strcmp(provisioner, CK_LOCAL_PATH_PROVISIONER) == 0)
            r = provision_local_path(c, claim, class, reterr);
    }
    json_decref(claim);
    ck_cached_unref(class);
    return r;
}

/* ---- syncClaim ---------------------------------------------------------------------- */

/* IsDelayBindingMode: the claim's class exists and binds WaitForFirstConsumer. */
static bool delay_binding(struct ck_pv_controller *c, const json_t *claim)
{
    const char *cls = class_of(claim);
    const json_t *class = NULL;
    if (!*cls || ck_lister_get(&c->classes, "", cls, &class) < 0)
        return false;
    const char *mode = json_string_value(json_object_get(class, "volumeBindingMode"));
    bool delay = mode && strcmp(mode, "WaitForFirstConsumer") == 0;
    ck_cached_unref(class);
    return delay;
}

static int pending(struct ck_pv_controller *c, const json_t *claim, struct ck_err *reterr)
{
    json_t *copy = json_deep_copy(claim);
    int r = claim_status(c, &copy, "Pending", NULL, NULL, NULL, NULL, reterr);
    json_decref(copy);
    return r;
}

static int sync_unbound_claim(struct ck_pv_controller *c, const json_t *claim,
                              struct ck_err *reterr)
{
    const char *volume_name = spec_str(claim, "volumeName");
    int r = 0;
    if (!volume_name || !*volume_name) {
        bool delay = delay_binding(c, claim);
        const json_t *volume = find_best_match(c, claim, delay);
        if (volume) {
            r = bind(c, volume, claim, reterr);
            ck_cached_unref(volume);
            return r;
        }
        if (delay && !ann(claim, CK_ANN_SELECTED_NODE)) {
            ck_event_recordf(c->recorder, claim, CK_EVENT_NORMAL, "WaitForFirstConsumer",
                             "waiting for first consumer to be created before binding");
        } else if (*class_of(claim)) {
            if ((r = provision(c, claim, reterr)) < 0)
                return r;
            return 0;
        } else {
            ck_event_recordf(c->recorder, claim, CK_EVENT_NORMAL, "FailedBinding",
                             "no persistent volumes available for this claim and no storage "
                             "class is set");
        }
        return pending(c, claim, reterr);
    }
    const json_t *volume = NULL;
    if (ck_lister_get(&c->volumes, "", volume_name, &volume) < 0)
        return pending(c, claim, reterr); /* asked for a volume that does not exist */
    if (!claim_ref(volume)) {
        const char *why = check_satisfies(volume, claim);
        if (why) {
            ck_event_recordf(c->recorder, claim, CK_EVENT_WARNING, "VolumeMismatch",
                             "Cannot bind to requested volume \"%s\": %s", volume_name, why);
            r = pending(c, claim, reterr);
        } else {
            r = bind(c, volume, claim, reterr);
        }
    } else if (bound_to_claim(volume, claim)) {
        r = bind(c, volume, claim, reterr);
    } else if (!has_ann(claim, CK_ANN_BOUND_BY_CONTROLLER)) {
        r = pending(c, claim, reterr); /* the volume is someone else's: wait */
    } else {
        r = ck_err_set(reterr, CK_EINVAL,
                       "invalid binding of claim \"%s/%s\" to volume \"%s\": volume already "
                       "claimed by \"%s/%s\"",
                       meta(claim, "namespace"), meta(claim, "name"), volume_name,
                       ref_str(claim_ref(volume), "namespace"), ref_str(claim_ref(volume), "name"));
    }
    ck_cached_unref(volume);
    return r;
}

static int lost(struct ck_pv_controller *c, const json_t *claim, const char *reason,
                const char *message, struct ck_err *reterr)
{
    json_t *copy = json_deep_copy(claim);
    int r = claim_status(c, &copy, "Lost", NULL, CK_EVENT_WARNING, reason, message, reterr);
    json_decref(copy);
    return r;
}

static int sync_bound_claim(struct ck_pv_controller *c, const json_t *claim, struct ck_err *reterr)
{
    const char *volume_name = spec_str(claim, "volumeName");
    if (!volume_name || !*volume_name)
        return lost(c, claim, "ClaimLost",
                    "Bound claim has lost reference to PersistentVolume. Data on the volume is "
                    "lost!",
                    reterr);
    const json_t *volume = NULL;
    if (ck_lister_get(&c->volumes, "", volume_name, &volume) < 0)
        return lost(c, claim, "ClaimLost",
                    "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                    reterr);
    int r;
    const json_t *ref = claim_ref(volume);
    if (!ref || strcmp(ref_str(ref, "uid"), meta(claim, "uid")) == 0)
        r = bind(c, volume, claim, reterr); /* rebinds, or finds everything done */
    else
        r = lost(c, claim, "ClaimMisbound",
                 "Two claims are bound to the same volume, this one is bound incorrectly", reterr);
    ck_cached_unref(volume);
    return r;
}

static int sync_claim(struct ck_pv_controller *c, const char *key, struct ck_err *reterr)
{
    char *ns = NULL, *name = NULL;
    const json_t *claim = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->claims, ns, name, &claim);
    free(ns);
    free(name);
    if (r < 0)
        return 0; /* deleted: its volume's sync releases the volume */
    r = has_ann(claim, CK_ANN_BIND_COMPLETED) ? sync_bound_claim(c, claim, reterr)
                                              : sync_unbound_claim(c, claim, reterr);
    ck_cached_unref(claim);
    return r;
}

/* ---- syncVolume --------------------------------------------------------------------- */

static int phase_of_copy(struct ck_pv_controller *c, const json_t *volume, const char *phase,
                         const char *message, const char *type, const char *reason,
                         struct ck_err *reterr)
{
    json_t *copy = json_deep_copy(volume);
    int r = volume_phase(c, &copy, phase, message, type, reason, reterr);
    json_decref(copy);
    return r;
}

/*
 * The directory of a released local-path volume, removed as the provisioner's deleter
 * removes it: only one the provisioner made under its own directory
 * (<dir>/<volume>_<namespace>_<claim>, one component below <dir>), removed relative to
 * <dir> without following a symlink in it out of the tree (ck__remove_tree_at). A path
 * elsewhere (a class's nodePath) is left, and so is a directory that is not on this
 * host. 0, or why it could not be removed (the negated errno).
 */
static int remove_local_path_dir(struct ck_pv_controller *c, const json_t *volume,
                                 struct ck_err *reterr)
{
    const char *path = json_string_value(
        json_object_get(json_object_get(json_object_get(volume, "spec"), "hostPath"), "path"));
    const char *name = meta(volume, "name");
    size_t base = strlen(c->local_path_dir), len = strlen(name);
    while (base > 0 && c->local_path_dir[base - 1] == '/')
        base--;
    const char *leaf = path && strncmp(path, c->local_path_dir, base) == 0 && path[base] == '/'
                           ? path + base + 1
                           : NULL;
    if (!leaf || strchr(leaf, '/') || strncmp(leaf, name, len) != 0 || leaf[len] != '_') {
        CK_LOGV(2, "persistentvolume-binder: volume %s: %s is not the provisioner's, left", name,
                path ? path : "(no hostPath)");
        return 0;
    }
    int dir = open(c->local_path_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r = dir < 0 ? -errno : ck__remove_tree_at(dir, leaf);
    if (dir >= 0)
        close(dir);
    if (r == -ENOENT) /* never made here (another node's), or gone already */
        return 0;
    if (r < 0)
        return ck_err_set(reterr, r, "failed to delete volume %s: %s", path, strerror(-r));
    CK_LOGV(2, "persistentvolume-binder: removed %s of volume %s", path, name);
    return 0;
}

/* reclaimVolume on a Released (or Failed) volume. */
static int reclaim(struct ck_pv_controller *c, const json_t *volume, struct ck_err *reterr)
{
    const char *policy = spec_str(volume, "persistentVolumeReclaimPolicy");
    if (!policy)
        policy = "Retain";
    if (strcmp(policy, "Retain") == 0)
        return 0;
    if (strcmp(policy, "Recycle") == 0)
        return phase_of_copy(c, volume, "Failed", "No recycler plugin found for the volume!",
                             CK_EVENT_WARNING, "VolumeFailedRecycle", reterr);
    if (strcmp(policy, "Delete") != 0)
        return phase_of_copy(c, volume, "Failed",
                             "Volume has unrecognized PersistentVolumeReclaimPolicy",
                             CK_EVENT_WARNING, "VolumeUnknownReclaimPolicy", reterr);
    const char *by = ann(volume, CK_ANN_PROVISIONED_BY);
    if (by && strcmp(by, CK_LOCAL_PATH_PROVISIONER) != 0)
        return 0; /* its external provisioner deletes it */
    if (!by) {
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "error getting deleter volume plugin for volume \"%s\": no deletable volume "
                 "plugin matched",
                 meta(volume, "name"));
        return phase_of_copy(c, volume, "Failed", msg, CK_EVENT_WARNING, "VolumeFailedDelete",
                             reterr);
    }
    struct ck_err err = {0};
    if (remove_local_path_dir(c, volume, &err) < 0) {
        int r = phase_of_copy(c, volume, "Failed", err.msg, CK_EVENT_WARNING, "VolumeFailedDelete",
                              reterr);
        ck_err_release(&err);
        return r;
    }
    json_t *opts = json_pack("{s:s, s:s, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "preconditions", "uid", meta(volume, "uid"));
    int r = ck_ctl_delete(&c->client, c->volumes_res, "", meta(volume, "name"), opts, NULL, reterr);
    json_decref(opts);
    if (r == CK_ENOENT) {
        ck_err_release(reterr);
        r = 0;
    }
    if (r == 0)
        CK_LOGV(2, "persistentvolume-binder: deleted volume %s", meta(volume, "name"));
    return r;
}

/* The claim a volume's claimRef names, from the cache and, when absent there, the server. */
static json_t *referenced_claim(struct ck_pv_controller *c, const json_t *ref)
{
    const json_t *cached = NULL;
    json_t *claim = NULL;
    if (ck_lister_get(&c->claims, ref_str(ref, "namespace"), ref_str(ref, "name"), &cached) == 0) {
        claim = json_deep_copy(cached);
        ck_cached_unref(cached);
        if (strcmp(meta(claim, "uid"), ref_str(ref, "uid")) == 0)
            return claim;
        json_decref(claim); /* maybe stale: ask the server */
        claim = NULL;
    }
    struct ck_err err = {0};
    if (ck_ctl_get(&c->client, c->claims_res, ref_str(ref, "namespace"), ref_str(ref, "name"),
                   &claim, &err) < 0)
        claim = NULL;
    ck_err_release(&err);
    if (claim && strcmp(meta(claim, "uid"), ref_str(ref, "uid")) != 0) {
        json_decref(claim);
        claim = NULL;
    }
    return claim;
}

static int unbind_volume(struct ck_pv_controller *c, const json_t *volume, struct ck_err *reterr)
{
    json_t *copy = json_deep_copy(volume);
    json_t *spec = json_object_get(copy, "spec");
    if (has_ann(copy, CK_ANN_BOUND_BY_CONTROLLER)) {
        json_object_del(spec, "claimRef");
        json_object_del(json_object_get(json_object_get(copy, "metadata"), "annotations"),
                        CK_ANN_BOUND_BY_CONTROLLER);
    } else {
        json_object_del(json_object_get(spec, "claimRef"), "uid");
    }
    json_t *out = NULL;
    int r = ck_ctl_update(&c->client, c->volumes_res, "", copy, &out, reterr);
    if (r == 0 && out) {
        json_decref(copy);
        copy = out;
    }
    if (r == 0)
        r = volume_phase(c, &copy, "Available", NULL, NULL, NULL, reterr);
    json_decref(copy);
    return r;
}

static int sync_volume(struct ck_pv_controller *c, const char *name, struct ck_err *reterr)
{
    const json_t *volume = NULL;
    if (ck_lister_get(&c->volumes, "", name, &volume) < 0)
        return 0;
    int r = 0;
    const json_t *ref = claim_ref(volume);
    json_t *claim = NULL;
    if (!ref || !*ref_str(ref, "uid")) {
        r = phase_of_copy(c, volume, "Available", NULL, NULL, NULL, reterr);
        goto out;
    }
    claim = referenced_claim(c, ref);
    const char *volume_name = claim ? spec_str(claim, "volumeName") : NULL;
    if (!claim) {
        if (strcmp(phase_of(volume), "Released") != 0 && strcmp(phase_of(volume), "Failed") != 0) {
            json_t *copy = json_deep_copy(volume);
            r = volume_phase(c, &copy, "Released", NULL, NULL, NULL, reterr);
            if (r == 0)
                r = reclaim(c, copy, reterr);
            json_decref(copy);
        } else {
            r = reclaim(c, volume, reterr);
        }
    } else if (!volume_name || !*volume_name) {
        if (strcmp(volume_mode(claim), volume_mode(volume)) != 0) {
            ck_event_recordf(c->recorder, volume, CK_EVENT_WARNING, "VolumeMismatch",
                             "Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                             "\"%s\" due to incompatible volumeMode.",
                             meta(claim, "name"));
            ck_event_recordf(c->recorder, claim, CK_EVENT_WARNING, "VolumeMismatch",
                             "Cannot bind PersistentVolume \"%s\" to requested "
                             "PersistentVolumeClaim due to incompatible volumeMode.",
                             meta(volume, "name"));
        } else {
            ck__ctl_enqueue(c->queue, claim); /* the claim's sync finishes the binding */
        }
    } else if (strcmp(volume_name, meta(volume, "name")) == 0) {
        r = phase_of_copy(c, volume, "Bound", NULL, NULL, NULL, reterr);
    } else if (has_ann(volume, CK_ANN_PROVISIONED_BY) &&
               same_string(spec_str(volume, "persistentVolumeReclaimPolicy"), "Delete")) {
        json_t *copy = json_deep_copy(volume);
        if (strcmp(phase_of(copy), "Released") != 0 && strcmp(phase_of(copy), "Failed") != 0)
            r = volume_phase(c, &copy, "Released", NULL, NULL, NULL, reterr);
        if (r == 0)
            r = reclaim(c, copy, reterr);
        json_decref(copy);
    } else if (has_ann(volume, CK_ANN_BOUND_BY_CONTROLLER)) {
        r = unbind_volume(c, volume, reterr);
    }
out:
    json_decref(claim);
    ck_cached_unref(volume);
    return r;
}

/* ---- handlers ----------------------------------------------------------------------- */

/* Claims that may now find this volume: the one it is pre-bound to, or every unbound one. */
static void enqueue_waiting_claims(struct ck_pv_controller *c, const json_t *volume)
{
    const json_t *ref = claim_ref(volume);
    if (ref) {
        if (*ref_str(ref, "name")) {
            char *key = fmt("%s/%s", ref_str(ref, "namespace"), ref_str(ref, "name"));
            if (key)
                ck_wq_add(c->queue, key);
            free(key);
        }
        return;
    }
    struct ck_obj_list all = {0};
    if (ck_lister_list(&c->claims, "", NULL, &all, NULL) < 0)
        return;
    for (size_t i = 0; i < all.n; i++)
        if (!has_ann(all.items[i], CK_ANN_BIND_COMPLETED))
            ck__ctl_enqueue(c->queue, all.items[i]);
    ck_obj_list_release(&all);
}

static void volume_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    struct ck_pv_controller *c = arg;
    ck__ctl_enqueue(c->queue, obj);
    enqueue_waiting_claims(c, obj);
}

static void volume_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    volume_add(obj, false, arg);
}

static void volume_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                          void *arg)
{
    (void)t;
    struct ck_pv_controller *c = arg;
    const json_t *ref = claim_ref(obj);
    if (ref && *ref_str(ref, "name")) {
        char *key = fmt("%s/%s", ref_str(ref, "namespace"), ref_str(ref, "name"));
        if (key)
            ck_wq_add(c->queue, key); /* the claim is Lost now */
        free(key);
    }
}

static void claim_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    struct ck_pv_controller *c = arg;
    ck__ctl_enqueue(c->queue, obj);
}

static void claim_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    claim_add(obj, false, arg);
}

static void claim_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                         void *arg)
{
    (void)t;
    struct ck_pv_controller *c = arg;
    const char *volume = spec_str(obj, "volumeName");
    if (volume && *volume)
        ck_wq_add(c->queue, volume); /* the volume is Released now */
}

/* ---- lifecycle ---------------------------------------------------------------------- */

/* A new class: its unbound claims may be provisioned now (Kubernetes resyncs claims). */
static void class_add(const json_t *obj, bool initial, void *arg)
{
    struct ck_pv_controller *c = arg;
    if (initial)
        return;
    struct ck_obj_list all = {0};
    if (ck_lister_list(&c->claims, "", NULL, &all, NULL) < 0)
        return;
    for (size_t i = 0; i < all.n; i++)
        if (!has_ann(all.items[i], CK_ANN_BIND_COMPLETED) &&
            strcmp(class_of(all.items[i]), meta(obj, "name")) == 0)
            ck__ctl_enqueue(c->queue, all.items[i]);
    ck_obj_list_release(&all);
}

static void class_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old, (void)obj, (void)arg;
}

static void class_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                         void *arg)
{
    (void)obj, (void)t, (void)arg;
}

void ck_pv_controller_handlers(struct ck_pv_controller *c, struct ck_event_handler *ret_volumes,
                               struct ck_event_handler *ret_claims,
                               struct ck_event_handler *ret_classes)
{
    *ret_volumes = (struct ck_event_handler){volume_add, volume_update, volume_delete, c};
    *ret_claims = (struct ck_event_handler){claim_add, claim_update, claim_delete, c};
    *ret_classes = (struct ck_event_handler){class_add, class_update, class_delete, c};
}

int ck_pv_controller_sync(struct ck_pv_controller *c, const char *key, struct ck_err *reterr)
{
    return strchr(key, '/') ? sync_claim(c, key, reterr) : sync_volume(c, key, reterr);
}

static int sync_key(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_pv_controller_sync(ctl->data, key, reterr);
}

static int init_common(struct ck_pv_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, const char *dir,
                       struct ck_err *reterr)
{
    c->client = *client;
    c->volumes_res = ck_controller_resource("", "v1", "persistentvolumes");
    c->claims_res = ck_controller_resource("", "v1", "persistentvolumeclaims");
    if (!c->volumes_res || !c->claims_res)
        return ck_err_set(reterr, CK_ENOENT, "persistentvolume-binder: the API serves no volumes");
    c->local_path_dir = ck__strdup(dir ? dir : CK_LOCAL_PATH_DIR);
    if (!c->local_path_dir)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = ck__ctl_recorder(&c->sink, &c->client, "persistentvolume-controller", clock,
                             synchronous_events, &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "persistentvolume-binder", sync_key, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_pv_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         const char *local_path_dir, struct ck_pv_controller **ret,
                         struct ck_err *reterr)
{
    struct ck_pv_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler hv, hc, hs;
    int r = init_common(c, &rest, NULL, false, local_path_dir, reterr);
    ck_pv_controller_handlers(c, &hv, &hc, &hs);
    const struct ck_resource *classes =
        ck_controller_resource("storage.k8s.io", "v1", "storageclasses");
    if (r == 0)
        r = ck__ctl_watch(factory, c->volumes_res, &hv, &c->infs[0], &c->volumes, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->claims_res, &hc, &c->infs[1], &c->claims, reterr);
    if (r == 0 && !classes)
        r = ck_err_set(reterr, CK_ENOENT, "persistentvolume-binder: the API serves no classes");
    if (r == 0)
        r = ck__ctl_watch(factory, classes, &hs, &c->infs[2], &c->classes, reterr);
    if (r < 0) {
        ck_pv_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_pv_controller_new_with(const struct ck_pv_controller_deps *deps,
                              struct ck_pv_controller **ret, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->volumes || !deps->claims || !deps->classes)
        return ck_err_set(reterr, CK_EINVAL,
                          "persistentvolume-binder: a client and three listers are needed");
    struct ck_pv_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->volumes = *deps->volumes;
    c->claims = *deps->claims;
    c->classes = *deps->classes;
    int r = init_common(c, deps->client, deps->clock, !deps->async_events, deps->local_path_dir,
                        reterr);
    if (r < 0) {
        ck_pv_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

struct ck_wq *ck_pv_controller_queue(struct ck_pv_controller *c)
{
    return c->queue;
}

int ck_pv_controller_run(struct ck_pv_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 3, workers, &c->runner, reterr);
}

struct ck_pv_controller *ck_pv_controller_free(struct ck_pv_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    free(c->local_path_dir);
    free(c);
    return NULL;
}
