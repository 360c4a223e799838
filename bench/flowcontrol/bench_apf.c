/*
 * bench_apf.c - what API Priority and Fairness costs a request (lib/apiserver/apf.c):
 * classification and admission (ck__apf_admit + ck__apf_done) against Kubernetes'
 * bootstrap FlowSchemas and PriorityLevelConfigurations (mandatory and suggested), for
 * requests that match the first schema (system:masters, exempt), a middle one
 * (a service account: service-accounts, workload-low) and the last but catch-all (a
 * user: global-default); beside the reference, the same calls with no schema at all
 * (the snapshot reference and the lock alone). One thread; medians of ROUNDS rounds of
 * 100,000 requests, in nanoseconds a request.
 *
 * Usage: bench_apf [ROUNDS]   (default 9)
 */
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/apiserver/internal.h"
#include "../benchtime.h"
#include "ckube/api.h"

#define PER_ROUND 100000

static const char *const masters[] = {"system:masters", "system:authenticated"};
static const char *const authenticated[] = {"system:authenticated"};
static const char *const sa_groups[] = {"system:serviceaccounts", "system:serviceaccounts:default",
                                        "system:authenticated"};

static double run(struct ck__apf *a, const struct ck__apf_digest *d, int rounds, char *ret_fs,
                  size_t fs_len)
{
    double samples[64];
    struct ck__apf_ticket t;
    for (int r = 0; r < rounds; r++) {
        double start = bench_cpu_ns();
        for (int i = 0; i < PER_ROUND; i++) {
            if (ck__apf_admit(a, d, &t) != CK__APF_EXECUTE) {
                fprintf(stderr, "a request was not admitted\n");
                exit(1);
            }
            ck__apf_done(a, &t);
        }
        samples[r] = (bench_cpu_ns() - start) / PER_ROUND;
    }
    snprintf(ret_fs, fs_len, "%s", t.classified ? t.fs_uid : "(none)");
    return bench_median(samples, rounds);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    if (rounds < 1 || rounds > 64)
        rounds = 9;
    json_t *boot = ck_flowcontrol_bootstrap();
    json_t *schemas = json_array(), *levels = json_array();
    static const char *const sets[] = {"mandatory", "suggested"};
    for (size_t s = 0; s < 2; s++) {
        const json_t *set = json_object_get(boot, sets[s]);
        json_array_extend(schemas, json_object_get(set, "flowSchemas"));
        json_array_extend(levels, json_object_get(set, "priorityLevelConfigurations"));
    }
    /* the UIDs a store would give, so the ticket names the schema it found */
    size_t i;
    json_t *o;
    json_array_foreach(schemas, i, o)
    {
        json_t *meta = json_object_get(o, "metadata");
        json_object_set(meta, "uid", json_object_get(meta, "name"));
    }
    struct ck__apf *a = ck__apf_new(600), *empty = ck__apf_new(600);
    json_t *none = json_array();
    if (!a || !empty || ck__apf_configure(a, schemas, levels) < 0 ||
        ck__apf_configure(empty, none, levels) < 0) {
        fprintf(stderr, "cannot configure\n");
        return 1;
    }
    struct ck__apf_digest admin = {.user = "admin",
                                   .groups = masters,
                                   .n_groups = 2,
                                   .resource_request = true,
                                   .verb = "get",
                                   .api_group = "",
                                   .resource = "pods",
                                   .subresource = "",
                                   .namespace = "default"};
    struct ck__apf_digest sa = admin, user = admin;
    sa.user = "system:serviceaccount:default:app";
    sa.groups = sa_groups;
    sa.n_groups = 3;
    user.user = "alice";
    user.groups = authenticated;
    user.n_groups = 1;
    printf("%u schemas, %u levels; %d rounds of %d requests, median CPU ns a request\n",
           (unsigned)json_array_size(schemas), (unsigned)json_array_size(levels), rounds,
           PER_ROUND);
    char fs[CK__APF_UID_MAX];
    double ref = run(empty, &user, rounds, fs, sizeof(fs));
    printf("%-44s %8.0f  (reference: no schema)\n", "unclassified", ref);
    const struct {
        const char *what;
        const struct ck__apf_digest *d;
    } cases[] = {{"system:masters get pod", &admin},
                 {"service account get pod", &sa},
                 {"authenticated user get pod", &user}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double ns = run(a, cases[c].d, rounds, fs, sizeof(fs));
        printf("%-44s %8.0f  -> %s\n", cases[c].what, ns, fs);
    }
    ck__apf_free(a);
    ck__apf_free(empty);
    json_decref(none);
    json_decref(schemas);
    json_decref(levels);
    json_decref(boot);
    return 0;
}
