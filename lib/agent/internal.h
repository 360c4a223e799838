/*
 * internal.h - what lib/agent's files share and nothing else sees.
 */
#ifndef CKUBE_AGENT_INTERNAL_H
#define CKUBE_AGENT_INTERNAL_H

#include <microhttpd.h>

#include "ckube/agent.h"

/*
 * Starts the log server (logserver.c) for a on address:port, or NULL when the port
 * cannot be had. Stop it with MHD_stop_daemon() before freeing a.
 */
struct MHD_Daemon *ck__agent_log_server_start(struct ck_agent *a, const char *address, int port);

#endif /* CKUBE_AGENT_INTERNAL_H */
