/*
 * controllers.h - what main.c needs from controllers.c: the in-process controllers of
 * `ckube server` and the `ckube controller-manager` subcommand.
 */
#ifndef CKUBE_CMD_CONTROLLERS_H
#define CKUBE_CMD_CONTROLLERS_H

#include <signal.h>
#include <stdbool.h>

#include "ckube/apiserver.h"
#include "ckube/manager.h"

struct ck_cmd_controllers {
    struct ck_rest *client;
    struct ck_controller_manager *manager;
};

/*
 * Starts the selected controllers against server, in this process, over
 * HTTP(S) as any client: with TLS as system:kube-controller-manager with a
 * client certificate of its own. 0, or -1 after printing why.
 */
int ck_cmd_controllers_start(const struct ck_apiserver *server, const char *selection,
                             struct ck_cmd_controllers *ret);
void ck_cmd_controllers_stop(struct ck_cmd_controllers *c);

/* `ckube controller-manager ...` (argv[0] is "controller-manager"); returns the exit code. */
int ck_cmd_controller_manager(int argc, char **argv);

/* `ckube certs client ...` (argv[0] is "certs", certs.c); returns the exit code. */
int ck_cmd_certs(int argc, char **argv);

/* From main.c: blocks SIGINT and SIGTERM for sigwait() and ignores SIGPIPE. */
void ck_cmd_block_stop_signals(sigset_t *ret_set);

/*
 * From main.c: applies -v N (verbosity true) or --logging-format F. NULL, or
 * what a valid value looks like.
 */
const char *ck_cmd_log_flag(bool verbosity, const char *arg);

#endif /* CKUBE_CMD_CONTROLLERS_H */
