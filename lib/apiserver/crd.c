/*
 * crd.c - serving CustomResourceDefinitions: the apiextensions controllers
 * kube-apiserver runs, inside every API server.
 *
 * One thread per server, woken by a store watch on the definitions' prefix
 * (and every second while a definition is being deleted), re-reads every
 * stored CustomResourceDefinition and brings three things level with it:
 *
 *   - naming (apiextensions-apiserver pkg/controller/status, the
 *     NamingConditionController): spec.names become status.acceptedNames
 *     unless another definition of the group already accepted the kind,
 *     list kind, singular or a short name; conditions NamesAccepted
 *     (NoConflicts, or <Name>Conflict with `"x" is already in use`) and
 *     Established (InitialNamesAccepted; NotAccepted while the names never
 *     were);
 *   - serving (customresource_handler.go): an Established definition's
 *     served versions are registered as kinds (lib/api/customresource.c)
 *     and unregistered when it goes; a changed definition's kinds are
 *     replaced. Every server on the same store does this, so a second
 *     server on one etcd serves what the first one stored, and a restarted
 *     server serves what is stored before it answers its first request;
 *   - cleanup (pkg/controller/finalizer, CRDFinalizer): a definition being
 *     deleted with the finalizer customresourcecleanup.apiextensions.k8s.io
 *     has every custom resource deleted (their own finalizers honoured),
 *     with Terminating InstanceDeletionInProgress, then
 *     InstanceDeletionCompleted and the finalizer removed, which removes
 *     the definition.
 *
 * Status writes are optimistic updates that change nothing when another
 * server made them first, so several servers need no leader election here.
 *
 * The kind registry is process-wide, so the kinds served are too: `served`
 * records, per definition name, the kinds registered and how many
 * controllers hold them (tests run several servers in one process);
 * a definition's kinds are unregistered when its last holder lets go. The
 * changes of one pass are applied in one registry snapshot
 * (ck_kinds_change()). Registered descriptors are never freed (readers may
 * still hold them): unregistered ones wait on `retired` until exit, and the
 * built-in schemas their sets lie over are one process-wide set
 * (ck__shared_schemas()), never freed either. A pass over many definitions
 * ends with ck__memory_release(): their decoded JSON is megabytes, freed at once.
 *
 * Threading: the thread (pass_thread.c) does all the work. `served` is guarded by served_lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define CRD_GROUP         "apiextensions.k8s.io"
#define CRD_RESOURCE      "customresourcedefinitions"
#define CLEANUP_FINALIZER "customresourcecleanup.apiextensions.k8s.io"
#define CLEANUP_PAGE      500
#define TRIM_AFTER        256 /* definitions in one pass */

/* ---- JSON helpers --------------------------------------------------------- */

/* The value at a dotted path ("status.acceptedNames"), or NULL. Borrowed. */
static const json_t *json_at(const json_t *obj, const char *dotted)
{
    char part[64];
    while (obj && *dotted) {
        size_t n = strcspn(dotted, ".");
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, dotted, n);
        part[n] = '\0';
        obj = json_object_get(obj, part);
        dotted += n + (dotted[n] == '.');
    }
    return obj;
}

static const char *str_at(const json_t *obj, const char *dotted)
{
    return json_string_value(json_at(obj, dotted));
}

/* parent[key] when it is an object, else a new empty object stored there; NULL out of memory. */
static json_t *object_at(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (json_is_object(v))
        return v;
    v = json_object();
    return json_object_set_new(parent, key, v) == 0 ? v : NULL;
}

/* ---- the kinds served, process-wide ------------------------------------- */

struct served {
    char *name;   /* the definition's */
    char *digest; /* what the kinds were built from (spec, accepted names, uid) */
    struct ck_crd_kinds *kinds;
    size_t holders;
};

static pthread_mutex_t served_lock = PTHREAD_MUTEX_INITIALIZER;
static struct served *served;
static size_t n_served;
static struct ck_crd_kinds **retired; /* unregistered, kept for readers until exit */
static size_t n_retired;

/*
 * The registry changes of one pass, applied at its end in one snapshot
 * (ck_kinds_change()): 1,000 definitions served at start cost one copy of
 * the registry's arrays, not 1,000. served_lock held.
 */
static const struct ck_kind **pending_remove, **pending_add;
static size_t n_pending_remove, n_pending_add;

static bool pend(const struct ck_kind ***list, size_t *n, const struct ck_kind *kind)
{
    const struct ck_kind **more = realloc(*list, (*n + 1) * sizeof(*more));
    if (!more)
        return false;
    *list = more;
    (*list)[(*n)++] = kind;
    return true;
}

static void flush_pending(void)
{
    if (n_pending_remove + n_pending_add == 0)
        return;
    size_t skipped = 0;
    struct ck_err err = {0};
    if (ck_kinds_change(pending_remove, n_pending_remove, pending_add, n_pending_add, &skipped,
                        &err) < 0) {
        /* no memory for one snapshot: one change at a time */
        for (size_t i = 0; i < n_pending_remove; i++)
            ck_kind_unregister(pending_remove[i], NULL);
        for (size_t i = 0; i < n_pending_add; i++)
            skipped += ck_kind_register(pending_add[i], NULL) < 0;
    }
    if (skipped)
        CK_LOGW("customresourcedefinitions: %zu versions not served: their group/version/resource "
                "is served already",
                skipped);
    ck_err_release(&err);
    n_pending_remove = n_pending_add = 0;
}

static void retire(struct ck_crd_kinds *kinds)
{
    for (size_t i = 0; i < ck_crd_kinds_count(kinds); i++)
        if (!pend(&pending_remove, &n_pending_remove, ck_crd_kinds_get(kinds, i)))
            ck_kind_unregister(ck_crd_kinds_get(kinds, i), NULL);
    struct ck_crd_kinds **more = realloc(retired, (n_retired + 1) * sizeof(*more));
    if (!more)
        return; /* leaked on purpose: never freed while readers may hold it */
    retired = more;
    retired[n_retired++] = kinds;
}

/* Registers each version's kind at the end of the pass. */
static void register_kinds(const char *name, struct ck_crd_kinds *kinds)
{
    for (size_t i = 0; i < ck_crd_kinds_count(kinds); i++) {
        if (pend(&pending_add, &n_pending_add, ck_crd_kinds_get(kinds, i)))
            continue;
        struct ck_err err = {0};
        if (ck_kind_register(ck_crd_kinds_get(kinds, i), &err) < 0)
            CK_LOGW("customresourcedefinition %s: %s", name, ck_err_message(&err));
        ck_err_release(&err);
    }
}

static struct served *find_served(const char *name)
{
    for (size_t i = 0; i < n_served; i++)
        if (strcmp(served[i].name, name) == 0)
            return &served[i];
    return NULL;
}

/* Takes a hold on name's kinds, building them from crd when new or changed. served_lock held. */
static int hold(const char *name, const char *digest, const json_t *crd,
                const struct ck_schemas *base, bool already_held)
{
    struct served *s = find_served(name);
    if (s && strcmp(s->digest, digest) == 0) {
        if (!already_held)
            s->holders++;
        return 0;
    }
    struct ck_crd_kinds *kinds = NULL;
    struct ck_err err = {0};
    char *digest_copy = strdup(digest);
    int r = digest_copy ? ck_crd_kinds_new(crd, base, &kinds, &err) : CK_ENOMEM;
    if (r < 0) {
        CK_LOGW("customresourcedefinition %s: cannot serve it: %s", name,
                r == CK_ENOMEM ? "out of memory" : ck_err_message(&err));
        ck_err_release(&err);
        free(digest_copy);
        return r;
    }
    if (s) { /* changed: the old kinds go, the new ones come */
        retire(s->kinds);
        free(s->digest);
        s->digest = digest_copy;
        s->kinds = kinds;
        if (!already_held)
            s->holders++;
    } else {
        struct served *more = realloc(served, (n_served + 1) * sizeof(*more));
        char *name_copy = strdup(name);
        if (!more || !name_copy) {
            if (more)
                served = more;
            free(name_copy);
            free(digest_copy);
            ck_crd_kinds_free(kinds);
            return CK_ENOMEM;
        }
        served = more;
        served[n_served++] = (struct served){name_copy, digest_copy, kinds, 1};
    }
    register_kinds(name, kinds);
    return 0;
}

/* Lets go of a hold; the last holder's release unregisters the kinds. served_lock held. */
static void release_hold(const char *name)
{
    struct served *s = find_served(name);
    if (!s || --s->holders > 0)
        return;
    retire(s->kinds);
    free(s->name);
    free(s->digest);
    *s = served[--n_served];
}

/* ---- the built-in schemas, process-wide ---------------------------------- */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ck_schemas *shared; /* never freed: kinds of any server may point into it */

int ck__shared_schemas(const struct ck_schemas **ret, struct ck_err *reterr)
{
    pthread_mutex_lock(&shared_lock);
    int r = shared ? 0 : ck_api_builtin_schemas(&shared, reterr);
    pthread_mutex_unlock(&shared_lock);
    if (r == 0)
        *ret = shared;
    return r;
}

/* ---- the controller ----------------------------------------------------- */

struct ck__crd_controller {
    struct ck__registry *registry; /* borrowed from the server */
    const struct ck_schemas *base; /* the built-in schemas CR schemas lie over */
    const struct ck_kind *crd_kind;
    struct ck__pass_thread *loop; /* runs sync_all() on every change */
    char **held;                  /* the definitions this controller holds kinds of */
    size_t n_held;
};

static const json_t *find_condition(const json_t *crd, const char *type)
{
    size_t i;
    const json_t *cond;
    json_array_foreach(json_at(crd, "status.conditions"), i, cond)
    {
        const char *t = json_string_value(json_object_get(cond, "type"));
        if (t && strcmp(t, type) == 0)
            return cond;
    }
    return NULL;
}

static bool condition_is(const json_t *crd, const char *type, const char *status)
{
    const char *s = json_string_value(json_object_get(find_condition(crd, type), "status"));
    return s && strcmp(s, status) == 0;
}

/*
 * Sets condition type on obj (status, reason, message); lastTransitionTime
 * moves only when the status changes. 0 or CK_ENOMEM.
 */
static int set_condition(json_t *obj, const char *type, const char *status, const char *reason,
                         const char *message)
{
    json_t *st = object_at(obj, "status");
    json_t *conditions = json_object_get(st, "conditions");
    if (!json_is_array(conditions)) {
        conditions = json_array();
        if (json_object_set_new(st, "conditions", conditions) < 0)
            return CK_ENOMEM;
    }
    char now[32];
    ck_rfc3339(time(NULL), now, sizeof(now));
    json_t *cond = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(conditions, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            cond = c;
    }
    int failed = 0;
    if (!cond) {
        cond = json_object();
        failed |= json_array_append_new(conditions, cond);
        failed |= json_object_set_new(cond, "type", json_string(type));
    }
    const char *old_status = json_string_value(json_object_get(cond, "status"));
    if (!old_status || strcmp(old_status, status) != 0 ||
        !json_object_get(cond, "lastTransitionTime"))
        failed |= json_object_set_new(cond, "lastTransitionTime", json_string(now));
    failed |= json_object_set_new(cond, "status", json_string(status));
    failed |= json_object_set_new(cond, "reason", json_string(reason));
    failed |= json_object_set_new(cond, "message", json_string(message));
    return failed ? CK_ENOMEM : 0;
}

/*
 * Whether crd's names are free in its group, as Kubernetes' naming controller
 * decides (calculateNamesAndConditions): its plural, singular and short
 * names may not be another definition's accepted plural, singular or short
 * name, nor its kind and list kind another's accepted kind or list kind.
 * Every rule is checked; the last conflict names the reason.
 */
struct naming {
    const json_t *accepted; /* the names to accept, NULL when some conflict */
    const char *reason;
    char message[300];
};

/* True when name is one of the strings of members (and arrays of strings) of names. */
static bool names_hold(const json_t *names, const char *const *members, const char *name)
{
    for (size_t m = 0; members[m]; m++) {
        const json_t *v = json_object_get(names, members[m]);
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return true;
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item)
        {
            if (json_is_string(item) && strcmp(json_string_value(item), name) == 0)
                return true;
        }
    }
    return false;
}

static bool in_use(json_t *const *all, size_t n, const char *group, const char *self,
                   const char *const *members, const char *name)
{
    for (size_t i = 0; name && *name && i < n; i++) {
        const char *other_group = str_at(all[i], "spec.group");
        const char *other_name = str_at(all[i], "metadata.name");
        if (other_group && other_name && strcmp(other_group, group) == 0 &&
            strcmp(other_name, self) != 0 &&
            names_hold(json_at(all[i], "status.acceptedNames"), members, name))
            return true;
    }
    return false;
}

static void check_names(const json_t *crd, json_t *const *all, size_t n, struct naming *ret)
{
    static const char *const resources[] = {"plural", "singular", "shortNames", NULL};
    static const char *const kinds[] = {"kind", "listKind", NULL};
    const char *group = str_at(crd, "spec.group");
    const char *self = str_at(crd, "metadata.name");
    const json_t *want = json_at(crd, "spec.names");
    ret->accepted = want;
    ret->reason = "NoConflicts";
    snprintf(ret->message, sizeof(ret->message), "no conflicts found");
    if (!group || !self)
        return;
    static const struct {
        const char *member, *reason;
        const char *const *against;
    } rules[] = {{"plural", "PluralConflict", resources},
                 {"singular", "SingularConflict", resources},
                 {"shortNames", "ShortNamesConflict", resources},
                 {"kind", "KindConflict", kinds},
                 {"listKind", "ListKindConflict", kinds}};
    for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
        const json_t *mine = json_object_get(want, rules[r].member);
        size_t count = json_is_array(mine) ? json_array_size(mine) : 1;
        for (size_t i = 0; i < count; i++) {
            const char *name =
                json_string_value(json_is_array(mine) ? json_array_get(mine, i) : mine);
            if (!in_use(all, n, group, self, rules[r].against, name))
                continue;
            ret->accepted = NULL;
            ret->reason = rules[r].reason;
            snprintf(ret->message, sizeof(ret->message), "\"%s\" is already in use", name);
            break;
        }
        if (!ret->accepted && strcmp(rules[r].member, "kind") == 0)
            break; /* the list kind is checked only when the kind is free */
    }
}

/* What a status write of the naming controller sets. */
struct status_change {
    const struct naming *naming;
    const char *terminating_reason; /* NULL: leave Terminating alone */
    const char *terminating_message;
    const char *terminating_status;
};

static json_t *status_mutate(const json_t *current, void *arg, struct ck_err *reterr)
{
    const struct status_change *ch = arg;
    json_t *next = ck__json_copy(current);
    if (!next) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    json_object_del(json_object_get(next, "metadata"), "resourceVersion"); /* retry on races */
    int failed = 0;
    if (ch->naming) {
        const struct naming *nm = ch->naming;
        if (nm->accepted) {
            failed |= json_object_set_new(object_at(next, "status"), "acceptedNames",
                                          ck__json_copy(nm->accepted));
            failed |= set_condition(next, "NamesAccepted", "True", nm->reason, nm->message);
            if (!condition_is(current, "Established", "True"))
                failed |= set_condition(next, "Established", "True", "InitialNamesAccepted",
                                        "the initial names have been accepted");
        } else {
            failed |= set_condition(next, "NamesAccepted", "False", nm->reason, nm->message);
            if (!condition_is(current, "Established", "True"))
                failed |= set_condition(next, "Established", "False", "NotAccepted",
                                        "not all names are accepted");
        }
    }
    if (ch->terminating_reason)
        failed |= set_condition(next, "Terminating", ch->terminating_status, ch->terminating_reason,
                                ch->terminating_message);
    if (failed) {
        json_decref(next);
        ck_err_no_memory(reterr);
        return NULL;
    }
    return next;
}

static int write_status(struct ck__crd_controller *c, const char *name,
                        const struct status_change *ch)
{
    char *body = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    int r = ck__registry_update(c->registry, c->crd_kind, "", name, "status", status_mutate,
                                (void *)ch, false, &body, &len, &err);
    if (r < 0 && r != CK_ENOENT)
        CK_LOGW("customresourcedefinition %s: status not written: %s", name, ck_err_message(&err));
    free(body);
    ck_err_release(&err);
    return r;
}

static json_t *drop_finalizer(const json_t *current, void *arg, struct ck_err *reterr)
{
    (void)arg;
    json_t *next = ck__json_copy(current);
    if (!next) {
        ck_err_no_memory(reterr);
        return NULL;
    }
    json_t *meta = json_object_get(next, "metadata");
    json_object_del(meta, "resourceVersion");
    json_t *finalizers = json_object_get(meta, "finalizers");
    for (size_t i = json_array_size(finalizers); i-- > 0;) {
        const char *f = json_string_value(json_array_get(finalizers, i));
        if (f && strcmp(f, CLEANUP_FINALIZER) == 0)
            json_array_remove(finalizers, i);
    }
    return next;
}

static bool has_cleanup_finalizer(const json_t *crd)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_at(crd, "metadata.finalizers"), i, f)
    {
        if (json_string_value(f) && strcmp(json_string_value(f), CLEANUP_FINALIZER) == 0)
            return true;
    }
    return false;
}

/*
 * Deletes every custom resource of a terminating definition. 1 when some
 * remain (being finalized, or not all deleted yet), 0 when none is left.
 */
static int delete_instances(struct ck__crd_controller *c, const json_t *crd)
{
    struct ck_crd_kinds *kinds = NULL; /* a storage view; never registered */
    struct ck_err err = {0};
    if (ck_crd_kinds_new(crd, c->base, &kinds, &err) < 0 || ck_crd_kinds_count(kinds) == 0) {
        ck_err_release(&err);
        ck_crd_kinds_free(kinds);
        /* no served version: nothing can have been stored through one */
        return 0;
    }
    /*
     * Read and deleted as stored, never through the conversion webhook (Kubernetes'
     * finalizer uses the storage version's REST storage): a definition whose webhook
     * has gone with its operator can still be deleted.
     */
    struct ck_kind stored_kind = *ck_crd_kinds_get(kinds, 0);
    stored_kind.conversion_webhook = NULL;
    const struct ck_kind *kind = &stored_kind;
    struct ck__list_options opts = {.limit = CLEANUP_PAGE};
    struct ck__list_result res = {0};
    int r = ck__registry_list(c->registry, kind, &opts, &res, &err);
    int remaining = r < 0 ? 1 : 0;
    for (size_t i = 0; r == 0 && i < res.n_kvs; i++) {
        json_t *obj = ck__decode_stored(res.kvs[i]);
        const char *ns = str_at(obj, "metadata.namespace");
        const char *name = str_at(obj, "metadata.name");
        remaining = 1;
        if (name && !json_at(obj, "metadata.deletionTimestamp")) {
            char *body = NULL;
            size_t len = 0;
            struct ck_err derr = {0};
            ck__registry_delete(c->registry, kind, ns ? ns : "", name, NULL, &body, &len, &derr);
            free(body);
            ck_err_release(&derr);
        }
        json_decref(obj);
    }
    if (res.continue_token)
        remaining = 1;
    ck__list_result_release(&res);
    ck_err_release(&err);
    ck_crd_kinds_free(kinds);
    return remaining;
}

/* Brings one terminating definition forward. true while it still needs attention. */
static bool finalize(struct ck__crd_controller *c, const json_t *crd)
{
    const char *name = str_at(crd, "metadata.name");
    if (!has_cleanup_finalizer(crd))
        return false;
    if (!condition_is(crd, "Terminating", "True") ||
        strcmp(str_at(find_condition(crd, "Terminating"), "reason") ?: "",
               "InstanceDeletionInProgress") != 0) {
        struct status_change ch = {.terminating_reason = "InstanceDeletionInProgress",
                                   .terminating_message = "CustomResource deletion is in progress",
                                   .terminating_status = "True"};
        write_status(c, name, &ch);
    }
    if (delete_instances(c, crd) != 0)
        return true;
    struct status_change done = {.terminating_reason = "InstanceDeletionCompleted",
                                 .terminating_message = "removed all instances",
                                 .terminating_status = "False"};
    write_status(c, name, &done);
    char *body = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    int r = ck__registry_update(c->registry, c->crd_kind, "", name, NULL, drop_finalizer, NULL,
                                false, &body, &len, &err);
    free(body);
    ck_err_release(&err);
    return r < 0 && r != CK_ENOENT;
}

/* What the kinds of crd were built from: its spec, accepted names, uid and whether it goes. */
static char *digest_of(const json_t *crd)
{
    json_t *d = json_pack("{s:O?, s:O?, s:O?, s:b}", "spec", json_object_get(crd, "spec"), "names",
                          json_at(crd, "status.acceptedNames"), "uid", json_at(crd, "metadata.uid"),
                          "terminating", json_at(crd, "metadata.deletionTimestamp") != NULL);
    char *text = d ? ck__json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS, NULL) : NULL;
    json_decref(d);
    return text;
}

static bool is_held(struct ck__crd_controller *c, const char *name, size_t *ret_at)
{
    for (size_t i = 0; i < c->n_held; i++)
        if (strcmp(c->held[i], name) == 0) {
            if (ret_at)
                *ret_at = i;
            return true;
        }
    return false;
}

/* Serves exactly the established definitions of crds (n of them). */
static void serve(struct ck__crd_controller *c, json_t *const *crds, size_t n)
{
    pthread_mutex_lock(&served_lock);
    bool *keep = calloc(c->n_held + 1, sizeof(*keep));
    for (size_t i = 0; i < n && keep; i++) {
        const char *name = str_at(crds[i], "metadata.name");
        if (!name || !condition_is(crds[i], "Established", "True"))
            continue;
        size_t at = 0;
        bool held = is_held(c, name, &at);
        char *digest = digest_of(crds[i]);
        if (digest && hold(name, digest, crds[i], c->base, held) == 0) {
            if (held) {
                keep[at] = true;
            } else {
                char **more = realloc(c->held, (c->n_held + 1) * sizeof(*more));
                char *copy = strdup(name);
                bool *more_keep = realloc(keep, (c->n_held + 2) * sizeof(*keep));
                if (more_keep)
                    keep = more_keep;
                if (more)
                    c->held = more;
                if (more && copy && more_keep) {
                    c->held[c->n_held] = copy;
                    keep[c->n_held++] = true;
                } else {
                    free(copy);
                    release_hold(name);
                }
            }
        } else if (held) {
            keep[at] = true; /* keep what is served rather than nothing */
        }
        free(digest);
    }
    for (size_t i = c->n_held; keep && i-- > 0;) {
        if (keep[i])
            continue;
        release_hold(c->held[i]);
        free(c->held[i]);
        c->held[i] = c->held[--c->n_held];
        keep[i] = keep[c->n_held];
    }
    free(keep);
    flush_pending();
    pthread_mutex_unlock(&served_lock);
}

/* One pass over every stored definition. true when something needs another pass soon. */
static bool sync_all(struct ck__crd_controller *c)
{
    struct ck__list_options opts = {0};
    struct ck__list_result res = {0};
    struct ck_err err = {0};
    if (ck__registry_list(c->registry, c->crd_kind, &opts, &res, &err) < 0) {
        CK_LOGW("customresourcedefinitions: cannot list: %s", ck_err_message(&err));
        ck_err_release(&err);
        return true;
    }
    json_t **crds = calloc(res.n_kvs + 1, sizeof(*crds));
    size_t n = 0;
    for (size_t i = 0; crds && i < res.n_kvs; i++)
        if ((crds[n] = ck__decode_stored(res.kvs[i])))
            n++;
    ck__list_result_release(&res);
    if (!crds)
        return true;
    bool again = false;
    for (size_t i = 0; i < n; i++) {
        const json_t *crd = crds[i];
        const char *name = str_at(crd, "metadata.name");
        if (!name)
            continue;
        if (json_at(crd, "metadata.deletionTimestamp")) {
            again |= finalize(c, crd);
            continue;
        }
        /* names once accepted stay accepted: a settled definition needs no comparing */
        if (condition_is(crd, "NamesAccepted", "True") &&
            condition_is(crd, "Established", "True") &&
            json_equal((json_t *)json_at(crd, "spec.names"),
                       (json_t *)json_at(crd, "status.acceptedNames")))
            continue;
        struct naming nm;
        check_names(crd, crds, n, &nm);
        bool accepted_same =
            nm.accepted &&
            json_equal((json_t *)nm.accepted, (json_t *)json_at(crd, "status.acceptedNames"));
        const json_t *cond = find_condition(crd, "NamesAccepted");
        bool names_current = cond &&
                             condition_is(crd, "NamesAccepted", nm.accepted ? "True" : "False") &&
                             strcmp(str_at(cond, "reason") ?: "", nm.reason) == 0;
        bool established_known = find_condition(crd, "Established") != NULL;
        if (!(names_current && established_known && (accepted_same || !nm.accepted))) {
            struct status_change ch = {.naming = &nm};
            write_status(c, name, &ch); /* the watch brings the result back */
        }
    }
    serve(c, crds, n);
    for (size_t i = 0; i < n; i++)
        json_decref(crds[i]);
    free(crds);
    if (n >= TRIM_AFTER)
        ck__memory_release(); /* a pass over many definitions leaves megabytes freed */
    return again;
}

static bool pass(void *arg)
{
    return sync_all(arg);
}

int ck__crd_start(struct ck__registry *registry, const struct ck_schemas *base,
                  struct ck__crd_controller **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const struct ck_kind *crd_kind = ck_kind_lookup(CRD_GROUP, "v1", CRD_RESOURCE);
    if (!crd_kind)
        return 0; /* definitions are not served: nothing to do */
    struct ck__crd_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    c->registry = registry;
    c->base = base;
    c->crd_kind = crd_kind;
    /* what is stored is served before the first request */
    int r = ck__pass_thread_start(registry->store, crd_kind, true, pass, c, &c->loop, reterr);
    if (r < 0) {
        ck__crd_stop(c);
        return r;
    }
    *ret = c;
    return 0;
}

struct ck__crd_controller *ck__crd_stop(struct ck__crd_controller *c)
{
    if (!c)
        return NULL;
    c->loop = ck__pass_thread_stop(c->loop);
    pthread_mutex_lock(&served_lock);
    for (size_t i = 0; i < c->n_held; i++) {
        release_hold(c->held[i]);
        free(c->held[i]);
    }
    flush_pending();
    pthread_mutex_unlock(&served_lock);
    free(c->held);
    free(c);
    return NULL;
}
