/*
 * proxy.h - `ckube proxy`, the command of cmd/ckube/proxy.c.
 */
#ifndef CKUBE_CMD_PROXY_H
#define CKUBE_CMD_PROXY_H

/* `ckube proxy ...` (argv[0] is "proxy"); returns the exit code. */
int ck_cmd_proxy(int argc, char **argv);

#endif /* CKUBE_CMD_PROXY_H */
