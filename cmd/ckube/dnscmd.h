/*
 * dnscmd.h - `ckube dns` (dns.c), for main.c's dispatch.
 */
#ifndef CKUBE_CMD_DNSCMD_H
#define CKUBE_CMD_DNSCMD_H

/* `ckube dns ...` (argv[0] is "dns"); returns the exit code. */
int ck_cmd_dns(int argc, char **argv);

#endif /* CKUBE_CMD_DNSCMD_H */
