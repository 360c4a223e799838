/*
 * ckube/podautoscaler.h - the horizontal pod autoscaler controller (kubernetes
 * pkg/controller/podautoscaler: horizontal.go and replica_calculator.go): every
 * HorizontalPodAutoscaler's target is scaled, through its scale subresource, to the
 * replicas its metrics ask for, within its bounds and its behavior's rates, and the
 * autoscaler's status says what was observed and decided.
 */
#ifndef CKUBE_PODAUTOSCALER_H
#define CKUBE_PODAUTOSCALER_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/controllers.h"
#include "ckube/informer.h"

/* kube-controller-manager's defaults for the --horizontal-pod-autoscaler-* flags. */
#define CK_HPA_SYNC_PERIOD               (15 * CK_SEC)     /* -sync-period */
#define CK_HPA_TOLERANCE                 0.1               /* -tolerance */
#define CK_HPA_DOWNSCALE_STABILIZATION   (5 * 60 * CK_SEC) /* -downscale-stabilization */
#define CK_HPA_CPU_INITIALIZATION_PERIOD (5 * 60 * CK_SEC) /* -cpu-initialization-period */
#define CK_HPA_INITIAL_READINESS_DELAY   (30 * CK_SEC)     /* -initial-readiness-delay */

/* The controller's tunables; a zero member takes its default above. */
struct ck_hpa_options {
    int64_t sync_period;               /* ns between two syncs of an autoscaler */
    double tolerance;                  /* a usage ratio within 1 +- this changes nothing */
    int64_t downscale_stabilization;   /* ns of recommendations a scale down looks back on */
    int64_t cpu_initialization_period; /* ns after a pod's start its CPU may be skipped */
    int64_t initial_readiness_delay;   /* ns after a pod's start it counts as never ready */
};

/* ---- the replica calculation (replica_calculator.go), pure ------------------------- */

/* One pod's reading of a metric, as the resource metrics API gives it. */
struct ck_hpa_pod_metric {
    const char *pod;      /* the pod's name (borrowed) */
    int64_t value;        /* milli units: millicores, millibytes */
    int64_t timestamp_ns; /* when it was measured, ns since the epoch */
    int64_t window_ns;    /* over how long */
};

/* What the calculation needs besides the pods and their metrics. */
struct ck_hpa_calc {
    double tolerance;
    int64_t cpu_initialization_period; /* ns */
    int64_t initial_readiness_delay;   /* ns */
    int64_t now_ns;                    /* the wall clock, ns since the epoch */
};

/* A calculation's result. */
struct ck_hpa_proposal {
    int32_t replicas;
    int32_t utilization; /* percent of the pods' requests (utilization targets only) */
    int64_t raw;         /* the average value per pod, milli units */
    int64_t timestamp_ns;
};

/*
 * GetResourceReplicas (target a utilization percent, raw false) and
 * GetRawResourceReplicas (target an average value in milli units, raw true): the
 * replicas the pods (the target's, borrowed JSON) ask for given their metrics of
 * resource ("cpu", "memory"; in container only when container is not NULL), currently
 * current replicas. Pods being deleted or Failed are ignored, Pending pods and (for cpu)
 * pods not yet ready count as unready, pods without a metric as missing; the unready
 * count as using nothing on a scale up, the missing as using their request (on a scale
 * down) or nothing (on a scale up), and a change within the tolerance or that would
 * turn the direction round keeps current. Returns 0, or CK_EINVAL with Kubernetes'
 * words in err ("no pods returned by selector while calculating replica count", ...).
 */
int ck_hpa_resource_replicas(const struct ck_hpa_calc *calc, int32_t current, int64_t target,
                             bool raw, const char *resource, const char *container,
                             const json_t *const *pods, size_t n_pods,
                             const struct ck_hpa_pod_metric *metrics, size_t n_metrics,
                             struct ck_hpa_proposal *ret, char *err, size_t err_size);

/* ---- the controller -------------------------------------------------------------- */

struct ck_hpa_controller;

/*
 * Where the controller reads its targets' scale and its pods' metrics (Kubernetes'
 * scale client and metrics client): over the REST client in production
 * (ck_hpa_sources_init_rest), fakes in unit tests. Both return 0 or a negative code
 * with the server's words in *reterr.
 */
struct ck_hpa_sources_ops {
    /* GET the scale subresource of res's object ns/name: an autoscaling/v1 Scale. */
    int (*get_scale)(void *data, const struct ck_resource *res, const char *ns, const char *name,
                     json_t **ret_scale, struct ck_err *reterr);
    /* PUT scale (an autoscaling/v1 Scale, borrowed) to the scale subresource of ns/name. */
    int (*update_scale)(void *data, const struct ck_resource *res, const char *ns, const char *name,
                        const json_t *scale, struct ck_err *reterr);
    /* LIST metrics.k8s.io/v1beta1 PodMetrics of ns matching selector: the items array. */
    int (*pod_metrics)(void *data, const char *ns, const char *selector, json_t **ret_items,
                       struct ck_err *reterr);
    /*
     * GET path of the custom or external metrics API (custom.metrics.k8s.io/v1beta2 or
     * v1beta1, as the group's discovery offers them; external.metrics.k8s.io/v1beta1;
     * through the API server, to the adapter an APIService registers) with the query
     * parameters labelSelector and
     * metricLabelSelector (NULL or "": left out): the MetricValueList or
     * ExternalMetricValueList answered.
     */
    int (*metric_values)(void *data, const char *path, const char *label_selector,
                         const char *metric_label_selector, json_t **ret_list,
                         struct ck_err *reterr);
    /* GET /apis: the APIGroupList, where the custom metrics API's versions are found. */
    int (*api_groups)(void *data, json_t **ret_list, struct ck_err *reterr);
};

struct ck_hpa_sources {
    const struct ck_hpa_sources_ops *ops;
    void *data;
};

/* The sources over a REST client (borrowed; it must outlive the sources). */
void ck_hpa_sources_init_rest(struct ck_hpa_sources *s, struct ck_rest *rest);

/* What the controller runs on, for tests (fakes) and for the manager. */
struct ck_hpa_controller_deps {
    const struct ck_hpa_sources *sources; /* copied; what it points to must outlive c */
    const struct ck_ctl_client *client;   /* copied; what it points to must outlive c */
    const struct ck_lister *hpas;         /* autoscaling/v2 HorizontalPodAutoscalers; ditto */
    const struct ck_lister *pods;         /* copied; ditto */
    struct ck_clock *clock;               /* the queue's clock; NULL = real */
    /* The wall clock, nanoseconds since the Unix epoch; NULL = the real time. */
    int64_t (*now)(void *arg);
    void *now_arg;
    bool async_events; /* false: events are written on the syncing thread */
    struct ck_hpa_options options;
};

/* The controller over the factory's informers (HorizontalPodAutoscalers and pods). */
int ck_hpa_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          const struct ck_hpa_options *options, struct ck_hpa_controller **ret,
                          struct ck_err *reterr);

/* The controller on deps, without informers (drive it with ck_hpa_controller_sync()). */
int ck_hpa_controller_new_with(const struct ck_hpa_controller_deps *deps,
                               struct ck_hpa_controller **ret, struct ck_err *reterr);

/*
 * reconcileKey for key ("namespace/name"): reads the target's scale, computes the
 * replicas every metric asks for, normalizes them (bounds, stabilization window, scale
 * rates), writes the target's scale when it changes and the autoscaler's status when
 * it changed, with Kubernetes' conditions and events; then queues the key again after
 * the sync period. Failures are recorded in the status and events, as Kubernetes does,
 * and the key retried after the sync period: returns 0 unless memory ran out.
 */
int ck_hpa_controller_sync(struct ck_hpa_controller *c, const char *key, struct ck_err *reterr);

/* The handler for HorizontalPodAutoscalers. */
void ck_hpa_controller_handler(struct ck_hpa_controller *c, struct ck_event_handler *ret);

/* The work queue (borrowed): tests read what was added, and after how long. */
struct ck_wq *ck_hpa_controller_queue(struct ck_hpa_controller *c);

int ck_hpa_controller_run(struct ck_hpa_controller *c, int workers, struct ck_err *reterr);

/* Stops and frees c (NULL: no-op); returns NULL. */
struct ck_hpa_controller *ck_hpa_controller_free(struct ck_hpa_controller *c);

#endif /* CKUBE_PODAUTOSCALER_H */
