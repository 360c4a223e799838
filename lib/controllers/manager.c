/*
 * manager.c - runs a selection of controllers against one API server (the core of
 * kube-controller-manager: --controllers, one shared informer factory, start when the
 * caches have synced).
 *
 * The selection follows Kubernetes' --controllers: a comma-separated list where "*"
 * enables every controller that is on by default, "name" enables one and "-name"
 * disables one; an unknown name is an error. Known controllers today: replicaset.
 *
 * Start never blocks on the server: a starter thread waits for the informers to sync and
 * then starts each controller's workers, so a controller manager started before its
 * server simply begins when the server answers (the reflectors back off meanwhile).
 *
 * Threading: start and free from one thread; the starter thread is joined by free.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/manager.h"
#include "ckube/replicaset.h"

static const char *const known[] = {"replicaset", NULL};

struct ck_controller_manager {
    struct ck_informer_factory *factory;
    struct ck_rs_controller *rs;
    int workers;
    pthread_t starter;
    bool starter_running;
};

int ck_controller_manager_check(const char *selection, struct ck_err *reterr)
{
    char *copy = strdup(selection ? selection : "*");
    if (!copy)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && r == 0; tok = strtok_r(NULL, ",", &save)) {
        const char *name = tok[0] == '-' ? tok + 1 : tok;
        if (strcmp(tok, "*") == 0)
            continue;
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok = ok || strcmp(known[i], name) == 0;
        if (!ok)
            r = ck_err_set(reterr, CK_EINVAL,
                           "\"%s\" is not in the list of known controllers (replicaset)", name);
    }
    free(copy);
    return r;
}

bool ck_controller_manager_enabled(const char *selection, const char *name)
{
    /* Kubernetes' IsControllerEnabled: the first item naming it wins, else "*" */
    bool star = false;
    size_t n = strlen(name);
    for (const char *p = selection ? selection : "*"; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (len == n + 1 && p[0] == '-' && strncmp(p + 1, name, n) == 0)
            return false;
        star = star || (len == 1 && p[0] == '*');
        p += len + (end ? 1 : 0);
    }
    return star; /* every known controller is on by default */
}

static void *starter_main(void *arg)
{
    struct ck_controller_manager *cm = arg;
    struct ck_err err = {0};
    if (cm->rs && ck_rs_controller_run(cm->rs, cm->workers, &err) < 0)
        CK_LOGV(1, "controller manager: replicaset not started: %s", err.msg);
    return NULL;
}

int ck_controller_manager_start(const struct ck_controller_manager_config *config,
                                struct ck_controller_manager **ret_cm, struct ck_err *reterr)
{
    int r = ck_controller_manager_check(config->controllers, reterr);
    if (r < 0)
        return r;
    struct ck_controller_manager *cm = calloc(1, sizeof(*cm));
    if (!cm)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    cm->workers = config->workers > 0 ? config->workers : 5;
    r = ck_informer_factory_new(config->client, NULL, 0, NULL, &cm->factory, reterr);
    if (r == 0 && ck_controller_manager_enabled(config->controllers, "replicaset"))
        r = ck_rs_controller_new(config->client, cm->factory, NULL, &cm->rs, reterr);
    if (r == 0)
        r = ck_informer_factory_start(cm->factory, reterr);
    if (r == 0) {
        if (pthread_create(&cm->starter, NULL, starter_main, cm) == 0)
            cm->starter_running = true;
        else
            r = ck_err_set(reterr, CK_ENOMEM, "cannot start the controller manager");
    }
    if (r < 0) {
        ck_controller_manager_free(cm);
        return r;
    }
    CK_LOGS(0, "Started controllers", "replicaset", cm->rs ? "on" : "off");
    *ret_cm = cm;
    return 0;
}

struct ck_controller_manager *ck_controller_manager_free(struct ck_controller_manager *cm)
{
    if (!cm)
        return NULL;
    ck_informer_factory_stop(cm->factory); /* also ends a starter still waiting for sync */
    if (cm->starter_running)
        pthread_join(cm->starter, NULL);
    ck_rs_controller_free(cm->rs);
    ck_informer_factory_free(cm->factory);
    free(cm);
    return NULL;
}
