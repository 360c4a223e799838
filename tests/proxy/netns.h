/*
 * netns.h - what the proxy's rule tests share: moving the test into a network namespace
 * of its own, where the kernel may check their transactions without touching the
 * machine's tables.
 */
#ifndef CKUBE_TESTS_PROXY_NETNS_H
#define CKUBE_TESTS_PROXY_NETNS_H

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

/* True once the process is alone in a new network namespace (as root); else says why
 * not and returns false, and the test checks its transactions without the kernel. */
static inline bool enter_private_netns(void)
{
    if (geteuid() != 0)
        printf("# not root: the kernel does not check the transactions\n");
    else if (unshare(CLONE_NEWNET) != 0)
        printf("# cannot make a network namespace (%m): the kernel does not check the "
               "transactions\n");
    else
        return true;
    return false;
}

#endif /* CKUBE_TESTS_PROXY_NETNS_H */
