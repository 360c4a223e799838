/*
 * ctl_client.c - the client interface a controller writes through (client-go's
 * clientset as controllers hold it: kubernetes.Interface), and its implementation over
 * the REST client. The fake for tests is fake_client.c.
 *
 * Each operation forwards to the ck_rest call of the same name with the same arguments,
 * so a controller reads exactly as if it called ck_rest, yet its tests swap in the fake.
 *
 * Threading: as the REST client (thread-safe).
 *
 * Tested through the server-backed controller tests
 * (tests/controllers/test_replicaset.c, tests/e2e/test_replicaset.sh), which
 * write through it.
 */
#include "ckube/controllers.h"

static int rest_get(void *data, const struct ck_resource *res, const char *namespace,
                    const char *name, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_get(data, res, namespace, name, ret_obj, reterr);
}

static int rest_create(void *data, const struct ck_resource *res, const char *namespace,
                       const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_create(data, res, namespace, obj, ret_obj, reterr);
}

static int rest_update(void *data, const struct ck_resource *res, const char *namespace,
                       const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_update(data, res, namespace, obj, ret_obj, reterr);
}

static int rest_update_status(void *data, const struct ck_resource *res, const char *namespace,
                              const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_update_status(data, res, namespace, obj, ret_obj, reterr);
}

static int rest_patch(void *data, const struct ck_resource *res, const char *namespace,
                      const char *name, const char *subresource, const char *patch_type,
                      const json_t *patch, json_t **ret_obj, struct ck_err *reterr)
{
    return ck_rest_patch(data, res, namespace, name, subresource, patch_type, patch, ret_obj,
                         reterr);
}

static int rest_delete(void *data, const struct ck_resource *res, const char *namespace,
                       const char *name, const json_t *options, json_t **ret_obj,
                       struct ck_err *reterr)
{
    return ck_rest_delete(data, res, namespace, name, options, ret_obj, reterr);
}

static const struct ck_ctl_client_ops rest_ops = {
    .get = rest_get,
    .create = rest_create,
    .update = rest_update,
    .update_status = rest_update_status,
    .patch = rest_patch,
    .delete = rest_delete,
};

void ck_ctl_client_init_rest(struct ck_ctl_client *c, struct ck_rest *rest)
{
    c->ops = &rest_ops;
    c->data = rest;
}

int ck_ctl_get(const struct ck_ctl_client *c, const struct ck_resource *res, const char *namespace,
               const char *name, json_t **ret_obj, struct ck_err *reterr)
{
    return c->ops->get(c->data, res, namespace, name, ret_obj, reterr);
}

int ck_ctl_create(const struct ck_ctl_client *c, const struct ck_resource *res,
                  const char *namespace, const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return c->ops->create(c->data, res, namespace, obj, ret_obj, reterr);
}

int ck_ctl_update(const struct ck_ctl_client *c, const struct ck_resource *res,
                  const char *namespace, const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return c->ops->update(c->data, res, namespace, obj, ret_obj, reterr);
}

int ck_ctl_update_status(const struct ck_ctl_client *c, const struct ck_resource *res,
                         const char *namespace, const json_t *obj, json_t **ret_obj,
                         struct ck_err *reterr)
{
    return c->ops->update_status(c->data, res, namespace, obj, ret_obj, reterr);
}

int ck_ctl_patch(const struct ck_ctl_client *c, const struct ck_resource *res,
                 const char *namespace, const char *name, const char *subresource,
                 const char *patch_type, const json_t *patch, json_t **ret_obj,
                 struct ck_err *reterr)
{
    return c->ops->patch(c->data, res, namespace, name, subresource, patch_type, patch, ret_obj,
                         reterr);
}

int ck_ctl_delete(const struct ck_ctl_client *c, const struct ck_resource *res,
                  const char *namespace, const char *name, const json_t *options, json_t **ret_obj,
                  struct ck_err *reterr)
{
    return c->ops->delete (c->data, res, namespace, name, options, ret_obj, reterr);
}
