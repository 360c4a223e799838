/*
 * certificate_controller.c - the controller every CertificateSigningRequest
 * controller runs on (kubernetes pkg/controller/certificates/
 * certificate_controller.go), the cleaner (cleaner/cleaner.go), and the
 * controller manager's rows csrsigning, csrapproving and csrcleaner.
 *
 * A CSR controller is a queue of request names fed by the
 * certificatesigningrequests informer (every add and update; a delete needs
 * nothing), whose sync hands the cached request to its handler: the signer,
 * the approver or the cleaner. A handler's failure is retried with the
 * queue's backoff (200 ms doubling to 1000 s, Kubernetes' rate limiter for
 * these controllers).
 *
 * The cleaner deletes a request once it is done with: approved and issued,
 * denied or failed more than an hour ago (the condition's lastUpdateTime),
 * pending (no Approved or Denied) more than a day after creation, or issued
 * with a certificate that has expired. Kubernetes polls every request each
 * hour; here each request is synced when it changes and again when its time
 * comes (at most an hour later).
 *
 * csrsigning reads the CA from --cluster-signing-cert-file and
 * --cluster-signing-key-file; without them it does not start (as
 * kube-controller-manager skips it).
 *
 * Threading: the runner's workers; the cache is the informer's.
 *
 * Tested by tests/controllers/test_csr.c and tests/e2e/test_certificates.sh.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/certificates.h"
#include "ckube/csrcontrollers.h"
#include "ckube/internal/util.h"

#define HOUR 3600LL

/* ---- the cleaner ------------------------------------------------------------------ */

static long long time_at(const json_t *obj, const char *key)
{
    int64_t t = 0;
    const char *s = json_string_value(json_object_get(obj, key));
    return s && ck__time_parse(s, &t, NULL) == 0 ? (long long)t : 0;
}

/* When the issued certificate (base64 of PEM) expires, or 0. */
static long long certificate_expiry(const char *b64)
{
    size_t len = 0;
    char *pem = b64 && *b64 ? ck_base64_decode(b64, &len) : NULL;
    gnutls_x509_crt_t crt;
    long long t = 0;
    if (pem && gnutls_x509_crt_init(&crt) == 0) {
        gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
        if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) == 0)
            t = (long long)gnutls_x509_crt_get_expiration_time(crt);
        gnutls_x509_crt_deinit(crt);
    }
    free(pem);
    return t;
}

/* When csr becomes due for deletion (seconds since the epoch), or 0 when it cannot tell. */
static long long cleaner_deadline(const json_t *csr)
{
    const char *cert =
        json_string_value(json_object_get(json_object_get(csr, "status"), "certificate"));
    const json_t *approved = ck_csr_true_condition(csr, "Approved");
    const json_t *denied = ck_csr_true_condition(csr, "Denied");
    const json_t *failed = ck_csr_true_condition(csr, "Failed");
    long long due = 0;
#define EARLIER(t)                                                                                 \
    do {                                                                                           \
        long long t_ = (t);                                                                        \
        if (t_ > 0 && (due == 0 || t_ < due))                                                      \
            due = t_;                                                                              \
    } while (0)
    if (cert && *cert) {
        EARLIER(certificate_expiry(cert));
        if (approved && time_at(approved, "lastUpdateTime"))
            EARLIER(time_at(approved, "lastUpdateTime") + HOUR);
    }
    if (denied && time_at(denied, "lastUpdateTime"))
        EARLIER(time_at(denied, "lastUpdateTime") + HOUR);
    if (failed && time_at(failed, "lastUpdateTime"))
        EARLIER(time_at(failed, "lastUpdateTime") + HOUR);
    if (!approved && !denied)
        EARLIER(time_at(json_object_get(csr, "metadata"), "creationTimestamp") + 24 * HOUR);
#undef EARLIER
    return due;
}

bool ck_csr_cleaner_due(const json_t *csr, long long now)
{
    long long due = cleaner_deadline(csr);
    return due > 0 && due < now;
}

/* ---- the CSR controller ------------------------------------------------------------ */

enum csr_role { ROLE_SIGNING, ROLE_APPROVING, ROLE_CLEANER };

struct csr_state {
    enum csr_role role;
    struct ck_informer *inf;
    struct ck_indexer *cache;
    struct ck_ctl_client client;
    const struct ck_resource *csr_res;
    struct ck_csr_signer *signer;
    struct ck_csr_approver *approver;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
};

static int clean(struct csr_state *s, const json_t *csr, const char *name, struct ck_err *reterr)
{
    long long now = (long long)time(NULL);
    long long due = cleaner_deadline(csr);
    if (due == 0)
        return 0;
    if (due >= now) { /* look again when it is due, or in an hour */
        long long wait = due - now + 1 < HOUR ? due - now + 1 : HOUR;
        ck_wq_add_after(s->queue, name, (int64_t)wait * CK_SEC);
        return 0;
    }
    struct ck_err err = {0};
    int r = ck_ctl_delete(&s->client, s->csr_res, "", name, NULL, NULL, &err);
    if (r == CK_ENOENT)
        r = 0;
    else if (r < 0)
        ck_err_set(reterr, r, "unable to delete CSR \"%s\": %s", name, ck_err_message(&err));
    else
        CK_LOGV(2, "csrcleaner: deleted CertificateSigningRequest %s", name);
    ck_err_release(&err);
    return r;
}

static int sync_csr(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct csr_state *s = ctl->data;
    const json_t *csr = NULL;
    if (ck_indexer_get_by_key(s->cache, key, &csr) < 0)
        return 0; /* gone: nothing to do */
    int r = s->role == ROLE_SIGNING     ? ck_csr_signer_handle(s->signer, csr, reterr)
            : s->role == ROLE_APPROVING ? ck_csr_approver_handle(s->approver, csr, reterr)
                                        : clean(s, csr, key, reterr);
    ck_cached_unref(csr);
    return r;
}

static void csr_added(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    const char *name = ck__meta_str(obj, "name");
    if (name)
        ck_wq_add(((struct csr_state *)arg)->queue, name);
}

static void csr_updated(const json_t *old_obj, const json_t *new_obj, void *arg)
{
    (void)old_obj;
    csr_added(new_obj, false, arg);
}

void ck_csr_manager_stop(void *state)
{
    struct csr_state *s = state;
    if (!s)
        return;
    if (s->runner)
        ck_runner_stop(s->runner);
    ck_wq_free(s->queue);
    ck_csr_signer_free(s->signer);
    ck_csr_approver_free(s->approver);
    free(s);
}

static int start(const struct ck_controller_context *ctx, enum csr_role role, void **ret_state,
                 struct ck_err *reterr)
{
    static const char *const names[] = {"csrsigning", "csrapproving", "csrcleaner"};
    const struct ck_resource *res =
        ck_controller_resource("certificates.k8s.io", "v1", "certificatesigningrequests");
    struct csr_state *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    s->role = role;
    s->csr_res = res;
    ck_ctl_client_init_rest(&s->client, ctx->client);
    s->inf = res ? ck_informer_factory_for(ctx->factory, res) : NULL;
    int r = s->inf ? 0 : ck_err_set(reterr, CK_ENOMEM, "%s: no informer", names[role]);
    if (r == 0 && role == ROLE_SIGNING) {
        gnutls_datum_t crt = {NULL, 0}, key = {NULL, 0};
        if (!ctx->cluster_signing_cert_file || !ctx->cluster_signing_key_file) {
            CK_LOGI("csrsigning: skipping: no --cluster-signing-cert-file and "
                    "--cluster-signing-key-file");
            free(s);
            *ret_state = NULL;
            return 0;
        }
        if (gnutls_load_file(ctx->cluster_signing_cert_file, &crt) < 0 ||
            gnutls_load_file(ctx->cluster_signing_key_file, &key) < 0)
            r = ck_err_set(reterr, CK_ENOENT, "csrsigning: cannot read %s or %s",
                           ctx->cluster_signing_cert_file, ctx->cluster_signing_key_file);
        char *crt_pem = crt.data ? ck__malloc(crt.size + 1) : NULL;
        char *key_pem = key.data ? ck__malloc(key.size + 1) : NULL;
        if (r == 0 && (!crt_pem || !key_pem))
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        if (r == 0) {
            memcpy(crt_pem, crt.data, crt.size);
            crt_pem[crt.size] = '\0';
            memcpy(key_pem, key.data, key.size);
            key_pem[key.size] = '\0';
            struct ck_csr_signer_config config = {.client = s->client,
                                                  .ca_cert_pem = crt_pem,
                                                  .ca_key_pem = key_pem,
                                                  .duration = ctx->cluster_signing_duration};
            r = ck_csr_signer_new(&config, &s->signer, reterr);
        }
        if (key.data) /* the CA key leaves memory as soon as it is parsed */
            memset(key.data, 0, key.size);
        if (key_pem)
            memset(key_pem, 0, key.size);
        gnutls_free(crt.data);
        gnutls_free(key.data);
        free(crt_pem);
        free(key_pem);
    } else if (r == 0 && role == ROLE_APPROVING) {
        struct ck_csr_approver_config config = {.client = s->client};
        r = ck_csr_approver_new(&config, &s->approver, reterr);
    }
    if (r == 0) {
        s->cache = ck_informer_indexer(s->inf);
        struct ck_wq_options o = {.name = names[role],
                                  .limiter = ck_rl_exponential_new(200 * CK_MSEC, 1000 * CK_SEC)};
        r = o.limiter ? ck_wq_new(&o, &s->queue, reterr)
                      : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        if (r < 0)
            ck_rl_free(o.limiter);
    }
    if (r == 0) {
        s->ctl = (struct ck_controller){
            .name = names[role], .sync = sync_csr, .data = s, .queue = s->queue};
        struct ck_event_handler h = {.on_add = csr_added, .on_update = csr_updated, .arg = s};
        r = ck_informer_add_handler(s->inf, &h, 0, reterr);
    }
    if (r < 0) {
        ck_csr_manager_stop(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

int ck_csrsigning_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr)
{
    return start(ctx, ROLE_SIGNING, ret_state, reterr);
}

int ck_csrapproving_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                  struct ck_err *reterr)
{
    return start(ctx, ROLE_APPROVING, ret_state, reterr);
}

int ck_csrcleaner_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr)
{
    return start(ctx, ROLE_CLEANER, ret_state, reterr);
}

int ck_csr_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct csr_state *s = state;
    if (!ck_informer_wait_for_sync(s->inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "%s: informer stopped", s->ctl.name);
    return ck_runner_start(&s->ctl, workers, &s->runner, reterr);
}
