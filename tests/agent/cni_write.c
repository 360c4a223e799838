/*
 * cni_write.c - ck__cni_ensure_config() from the command line, for
 * test_cni_plugins.sh: `cni_write CONF_DIR BIN_DIR POD_CIDR` prints the
 * configuration's path and "written" or "found"; exits 1 with the error otherwise.
 */
#include <stdio.h>

#include "../../lib/agent/internal.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: cni_write CONF_DIR BIN_DIR POD_CIDR\n");
        return 2;
    }
    char path[4096];
    bool written = false;
    struct ck_err err = {0};
    if (ck__cni_ensure_config(argv[1], argv[2], argv[3], path, sizeof(path), &written, &err) < 0) {
        fprintf(stderr, "cni_write: %s\n", err.msg);
        return 1;
    }
    printf("%s %s\n", path, written ? "written" : "found");
    return 0;
}
