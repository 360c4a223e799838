/*
 * certs.c - `ckube certs client`: a client certificate for a component or a
 * user, signed by the CA `ckube server` made in DATA-DIR/pki, and optionally a
 * kubeconfig that uses it. This is how a node agent gets its Node identity
 * (--cn system:node:NAME --org system:nodes), or a separate scheduler its own
 * (--cn system:kube-scheduler), as kubeadm's `kubeconfig user` does.
 *
 * The certificate and key go to DATA-DIR/pki/FILE.crt and .key (key mode
 * 0600); an existing pair with the same subject that is not close to expiry
 * is kept. Nothing here talks to the server: the CA key is read from disk.
 */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/auth.h"
#include "controllers.h"

#define MAX_ORGS 8

static const char certs_usage[] =
    "Usage:\n"
    "  ckube certs client --cn NAME [--org GROUP]... [flags]\n"
    "\n"
    "Makes a client certificate signed by the cluster CA in DATA-DIR/pki, for a\n"
    "component (system:kube-scheduler, system:node:NAME with --org system:nodes) or\n"
    "a user (CN is the user name, each O a group).\n"
    "\n"
    "Flags:\n"
    "      --data-dir DIR       the server's data directory (default ./ckube-data)\n"
    "      --cn NAME            the user name (required)\n"
    "      --org GROUP          a group (repeatable, at most 8)\n"
    "      --file NAME          file name in DATA-DIR/pki without .crt/.key\n"
    "                           (default: the CN with ':' replaced by '-')\n"
    "      --kubeconfig FILE    also write a kubeconfig using the certificate\n"
    "      --server URL         the server the kubeconfig names (default https://127.0.0.1:6443)\n"
    "  -h, --help               print this help\n";

static int certs_usage_error(const char *what, const char *value)
{
    fprintf(stderr, "error: %s%s%s\n\n%s", what, value ? ": " : "", value ? value : "",
            certs_usage);
    return 2;
}

/* A kubeconfig naming the files (kubectl and the clients read paths as well as data). */
static int write_kubeconfig(const char *path, const char *server, const char *ca, const char *cert,
                            const char *key)
{
    json_t *config =
        json_pack("{s:s, s:s, s:[{s:s, s:{s:s, s:s}}], s:[{s:s, s:{s:s, s:s}}], "
                  "s:[{s:s, s:{s:s, s:s}}], s:s}",
                  "apiVersion", "v1", "kind", "Config", "clusters", "name", "ckube", "cluster",
                  "server", server, "certificate-authority", ca, "users", "name", "ckube", "user",
                  "client-certificate", cert, "client-key", key, "contexts", "name", "ckube",
                  "context", "cluster", "ckube", "user", "ckube", "current-context", "ckube");
    int r = config ? json_dump_file(config, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
    json_decref(config);
    if (r != 0)
        fprintf(stderr, "error: cannot write %s\n", path);
    return r;
}

int ck_cmd_certs(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "client") != 0) {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            fputs(certs_usage, stdout);
            return 0;
        }
        return certs_usage_error("unknown or missing subcommand (want: client)",
                                 argc >= 2 ? argv[1] : NULL);
    }
    enum { O_DATA_DIR = 300, O_CN, O_ORG, O_FILE, O_KUBECONFIG, O_SERVER };
    static const struct option longopts[] = {
        {"data-dir", required_argument, NULL, O_DATA_DIR},
        {"cn", required_argument, NULL, O_CN},
        {"org", required_argument, NULL, O_ORG},
        {"file", required_argument, NULL, O_FILE},
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"server", required_argument, NULL, O_SERVER},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *data_dir = "./ckube-data", *cn = NULL, *file = NULL, *kubeconfig = NULL;
    const char *server = "https://127.0.0.1:6443";
    const char *orgs[MAX_ORGS];
    size_t n_orgs = 0;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc - 1, argv + 1, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case O_DATA_DIR:
            data_dir = optarg;
            break;
        case O_CN:
            cn = optarg;
            break;
        case O_ORG:
            if (n_orgs == MAX_ORGS)
                return certs_usage_error("too many --org flags (at most 8)", NULL);
            orgs[n_orgs++] = optarg;
            break;
        case O_FILE:
            file = optarg;
            break;
        case O_KUBECONFIG:
            kubeconfig = optarg;
            break;
        case O_SERVER:
            server = optarg;
            break;
        case 'h':
            fputs(certs_usage, stdout);
            return 0;
        case ':':
            return certs_usage_error("flag needs an argument", argv[optind]);
        default:
            return certs_usage_error("unknown flag", argv[optind]);
        }
    }
    if (optind < argc - 1)
        return certs_usage_error("unexpected argument", argv[optind + 1]);
    if (!cn || !*cn)
        return certs_usage_error("--cn is required", NULL);
    char base[256];
    snprintf(base, sizeof(base), "%s", file ? file : cn);
    for (char *p = base; *p; p++)
        if (*p == ':' || *p == '/')
            *p = '-';
    if (!base[0] || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return certs_usage_error("invalid --file", file);
    char pki_dir[PATH_MAX], ca[PATH_MAX + 16], cert[PATH_MAX + 300], key[PATH_MAX + 300];
    snprintf(pki_dir, sizeof(pki_dir), "%s/pki", data_dir);
    snprintf(ca, sizeof(ca), "%s/%s", pki_dir, CK_PKI_CA_CERT);
    snprintf(cert, sizeof(cert), "%s/%s.crt", pki_dir, base);
    snprintf(key, sizeof(key), "%s/%s.key", pki_dir, base);
    struct ck_pki_options opts = {.dir = pki_dir};
    struct ck_err err = {0};
    if (ck_pki_client_cert(&opts, base, cn, orgs, n_orgs, &err) < 0) {
        fprintf(stderr, "error: %s\n", ck_err_message(&err));
        ck_err_release(&err);
        return 1;
    }
    printf("%s\n%s\n", cert, key);
    if (kubeconfig) {
        char abs_ca[PATH_MAX], abs_cert[PATH_MAX], abs_key[PATH_MAX];
        if (!realpath(ca, abs_ca) || !realpath(cert, abs_cert) || !realpath(key, abs_key)) {
            fprintf(stderr, "error: cannot resolve the paths in %s\n", pki_dir);
            return 1;
        }
        if (write_kubeconfig(kubeconfig, server, abs_ca, abs_cert, abs_key) != 0)
            return 1;
        printf("%s\n", kubeconfig);
    }
    return 0;
}
