/*
 * cni.c - the node's CNI configuration, written when there is none.
 *
 * containerd's CRI gives each pod sandbox its network through CNI and refuses to
 * create sandboxes (and reports NetworkReady false) while its configuration
 * directory holds no network configuration. Kubernetes leaves that directory to the
 * cluster's network add-on; ckube has none, so the agent writes a minimal one for
 * its node when the directory is empty, the way a single-node setup's installer
 * would: a bridge on the node with host-local addresses from the node's pod range.
 *
 * What counts as "a configuration" is what containerd's CRI loads (go-cni over
 * libcni's ConfFiles): the entries of the directory, directories left out, whose
 * extension (from the last dot on) is .conf, .conflist or .json; the first of them
 * in byte order is the pod network. Any such file an add-on or an administrator wrote
 * is left alone and nothing is written. The agent's own file is written again when the
 * node's range differs from the file's; until the runtime knows the node's range, an
 * earlier start's file does not count (its range may be another's).
 *
 * What is written, as 10-ckube.conflist (cniVersion 0.4.0, name "ckube"):
 *   - bridge: the Linux bridge ckube0 on the node, each pod's veth on it;
 *     isGateway gives the bridge the range's first address and the pods a route
 *     through it, ipMasq masquerades what pods send outside the range (the node
 *     has no routes to pod ranges elsewhere), hairpinMode lets a pod reach itself
 *     through a Service address that leads back to it;
 *     ipam host-local: addresses from the pod range, kept under host-local's own
 *     data directory (/var/lib/cni/networks/ckube), with a default route;
 *     forceAddress: when the range changed (the runtime lets it change only while no
 *     sandbox uses the pod network, runtime_cri.c), the bridge's address of the old
 *     range is replaced by the new one's gateway instead of failing every sandbox.
 *   - portmap (capabilities portMappings): the CRI passes a pod's hostPort
 *     mappings to the plugins that declare this capability; portmap makes them
 *     DNAT rules.
 * loopback is not in the list though its binary must be there: containerd's CRI
 * brings every sandbox's lo up itself, through a network of its own ("cni-loopback",
 * go-cni's WithLoNetwork, which CRI's load options always include) that runs the
 * `loopback` plugin from the same plugin directory. Listing it here too would run
 * it twice on lo. So the four plugins checked in the plugin directory are bridge,
 * host-local, portmap and loopback; Debian's containernetworking-plugins installs
 * them in /usr/lib/cni, which Debian's containerd configuration names as its
 * bin_dir (containerd's own default is /opt/cni/bin).
 *
 * cniVersion 0.4.0: the libcni of Debian 12's containerd 1.6.20 and the plugins of
 * its containernetworking-plugins 1.1.1 both know 0.4.0 and 1.0.0; 0.4.0 is also
 * known to older plugin builds (0.8 on) an administrator may have put in place of
 * Debian's, and nothing here needs 1.0.0.
 *
 * The pod range is IPv4 only for now, a /8 to a /30 (host-local needs at least two
 * addresses besides the network's, and refuses a subnet with host bits set, so this
 * refuses both first, with the reason).
 *
 * The file is written atomically (util's ck__write_file_atomic: a temporary file
 * next to it, fsync, rename); its temporary name ends in digits, never in an
 * extension containerd reads, so a reload in between sees no half-written network.
 * containerd watches the directory and loads the file when it appears.
 *
 * Threading: no state; two agents writing the same directory at once would each
 * rename a whole file over the other's.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "internal.h"

#define CNI_FILE    "10-ckube.conflist"
#define CNI_NETWORK "ckube"
#define CNI_BRIDGE  "ckube0"
#define CNI_VERSION "0.4.0"

/* The plugins the configuration (and containerd's own loopback network) runs. */
static const char *const plugins[] = {"bridge", "host-local", "portmap", "loopback"};

int ck__cni_parse_cidr(const char *cidr, struct ck_err *reterr)
{
    if (!cidr || !*cidr)
        return ck_err_set(reterr, CK_EINVAL, "pod CIDR is empty: want an IPv4 network a.b.c.d/N");
    const char *slash = strchr(cidr, '/');
    char addr[INET6_ADDRSTRLEN];
    size_t alen = slash ? (size_t)(slash - cidr) : 0;
    if (!slash || alen == 0 || alen >= sizeof(addr))
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid pod CIDR \"%s\": want an IPv4 network a.b.c.d/N", cidr);
    memcpy(addr, cidr, alen);
    addr[alen] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, addr, &a) != 1) {
        struct in6_addr a6;
        if (inet_pton(AF_INET6, addr, &a6) == 1)
            return ck_err_set(reterr, CK_EINVAL,
                              "invalid pod CIDR \"%s\": only an IPv4 range is supported", cidr);
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid pod CIDR \"%s\": \"%s\" is not an IPv4 address", cidr, addr);
    }
    const char *p = slash + 1;
    size_t plen = strlen(p);
    int prefix = -1;
    if (plen >= 1 && plen <= 2 && strspn(p, "0123456789") == plen && !(plen == 2 && p[0] == '0'))
        prefix = atoi(p);
    if (prefix < 0)
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid pod CIDR \"%s\": the prefix length must be a number", cidr);
    if (prefix < 8 || prefix > 30)
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid pod CIDR \"%s\": the prefix length must be 8 to 30 (a /%d %s)",
                          cidr, prefix, prefix < 8 ? "is too large" : "leaves no pod addresses");
    uint32_t host = ntohl(a.s_addr);
    uint32_t mask = 0xffffffffu << (32 - prefix);
    if (host & ~mask) {
        struct in_addr net = {.s_addr = htonl(host & mask)};
        char nbuf[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &net, nbuf, sizeof(nbuf));
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid pod CIDR \"%s\": host bits are set (the network is %s/%d)", cidr,
                          nbuf, prefix);
    }
    return 0;
}

/* Whether an entry's name has an extension libcni's ConfFiles takes (Go's filepath.Ext). */
static bool is_config_name(const char *name)
{
    const char *ext = strrchr(name, '.');
    return ext && (strcmp(ext, ".conf") == 0 || strcmp(ext, ".conflist") == 0 ||
                   strcmp(ext, ".json") == 0);
}

int ck__cni_find_config(const char *conf_dir, char *buf, size_t size, struct ck_err *reterr)
{
    if (!conf_dir)
        conf_dir = CK_AGENT_CNI_CONF_DIR;
    DIR *d = opendir(conf_dir);
    if (!d) {
        int r = -errno;
        if (r == CK_ENOENT)
            return ck_err_set(reterr, CK_ENOENT, "no CNI configuration in %s (no such directory)",
                              conf_dir);
        return ck_err_set(reterr, r, "cannot read the CNI configuration directory %s: %s", conf_dir,
                          strerror(-r));
    }
    char *first = NULL;
    int r = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                r = ck_err_set(reterr, -errno, "cannot read the CNI configuration directory %s: %s",
                               conf_dir, strerror(errno));
            break;
        }
        if (!is_config_name(e->d_name) || (first && strcmp(e->d_name, first) >= 0))
            continue;
        bool dir = e->d_type == DT_DIR;
        struct stat st;
        if (e->d_type == DT_UNKNOWN && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            dir = S_ISDIR(st.st_mode);
        if (dir)
            continue;
        free(first);
        first = ck__strdup(e->d_name);
        if (!first) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            break;
        }
    }
    closedir(d);
    if (r == 0 && !first)
        r = ck_err_set(reterr, CK_ENOENT, "no CNI configuration in %s", conf_dir);
    if (r == 0 && buf) {
        int n = snprintf(buf, size, "%s/%s", conf_dir, first);
        if (n < 0 || (size_t)n >= size)
            r = ck_err_set(reterr, CK_EINVAL, "the path of %s/%s is too long", conf_dir, first);
    }
    free(first);
    return r;
}

/* mkdir -p path with mode for every directory it makes. 0 or a negated errno. */
static int make_dirs(const char *path, mode_t mode)
{
    char *copy = ck__strdup(path);
    if (!copy)
        return CK_ENOMEM;
    int r = 0;
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(copy, mode) != 0 && errno != EEXIST) {
            r = -errno;
            break;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    free(copy);
    if (r == 0) {
        struct stat st;
        if (stat(path, &st) != 0)
            r = -errno;
        else if (!S_ISDIR(st.st_mode))
            r = -ENOTDIR;
    }
    return r;
}

/* The configuration list for the range; NULL when out of memory. */
static json_t *config_json(const char *pod_cidr)
{
    return json_pack(
        "{s:s, s:s, s:[{s:s, s:s, s:b, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], s:[{s:s}]}},"
        " {s:s, s:{s:b}}]}",
        "cniVersion", CNI_VERSION, "name", CNI_NETWORK, "plugins",
        /* bridge */
        "type", "bridge", "bridge", CNI_BRIDGE, "isGateway", 1, "ipMasq", 1, "hairpinMode", 1,
        "forceAddress", 1, "ipam", "type", "host-local", "ranges", "subnet", pod_cidr, "routes",
        "dst", "0.0.0.0/0",
        /* portmap */
        "type", "portmap", "capabilities", "portMappings", 1);
}

/*
 * The first range's subnet of the configuration at path when it is this agent's own
 * file (named 10-ckube.conflist, a bridge with host-local ranges): 1 and the subnet in
 * buf; else 0.
 */
static int own_file_subnet(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    if (strcmp(base ? base + 1 : path, CNI_FILE) != 0)
        return 0;
    char *text = NULL;
    size_t len = 0;
    if (ck__read_file(path, 1 << 20, &text, &len) < 0)
        return 0; /* unreadable: containerd reports it; leave it */
    json_t *conf = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *bridge = json_array_get(json_object_get(conf, "plugins"), 0);
    json_t *ranges = json_object_get(json_object_get(bridge, "ipam"), "ranges");
    const char *subnet =
        json_string_value(json_object_get(json_array_get(json_array_get(ranges, 0), 0), "subnet"));
    int r = subnet && (size_t)snprintf(buf, size, "%s", subnet) < size;
    json_decref(conf);
    return r;
}

int ck__cni_own_range(const char *conf_dir, char *buf, size_t size)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s", conf_dir ? conf_dir : CK_AGENT_CNI_CONF_DIR,
                     CNI_FILE);
    return n > 0 && (size_t)n < sizeof(path) && own_file_subnet(path, buf, size);
}

const char *ck__cni_node_range(const json_t *node, const char *flag, bool flag_due)
{
    const char *cidr = json_string_value(json_object_get(json_object_get(node, "spec"), "podCIDR"));
    if (cidr && *cidr)
        return cidr;
    return flag && *flag && flag_due ? flag : NULL;
}

int ck__cni_ensure_config(const char *conf_dir, const char *bin_dir, const char *pod_cidr,
                          char *ret_path, size_t size, bool *ret_written, struct ck_err *reterr)
{
    if (!conf_dir)
        conf_dir = CK_AGENT_CNI_CONF_DIR;
    if (!bin_dir)
        bin_dir = CK_AGENT_CNI_BIN_DIR;
    struct ck_err found = {0};
    char found_path[4096];
    int r = ck__cni_find_config(conf_dir, found_path, sizeof(found_path), &found);
    char own[64];
    bool is_own = r == 0 && own_file_subnet(found_path, own, sizeof(own));
    if (is_own && !pod_cidr)
        /* an earlier start's file: its range may no longer be the node's */
        return ck_err_set(reterr, CK_ENOENT,
                          "no pod CIDR for the node yet (the Node's spec.podCIDR, which the "
                          "controller manager's node-ipam-controller gives; or --pod-cidr when "
                          "it gives none): %s is left for it",
                          found_path);
    if (r == 0 && !(is_own && strcmp(own, pod_cidr) != 0)) {
        if (ret_path && (size_t)snprintf(ret_path, size, "%s", found_path) >= size)
            return ck_err_set(reterr, CK_EINVAL, "the path of %s is too long", found_path);
        if (ret_written)
            *ret_written = false;
        return 0;
    }
    if (r < 0 && r != CK_ENOENT)
        return ck_err_set(reterr, r, "%s", found.msg);
    if (!pod_cidr)
        return ck_err_set(reterr, CK_ENOENT,
                          "no CNI configuration in %s and no pod CIDR for the node yet (the "
                          "Node's spec.podCIDR, which the controller manager's "
                          "node-ipam-controller gives; or --pod-cidr)",
                          conf_dir);

    r = ck__cni_parse_cidr(pod_cidr, reterr);
    if (r < 0)
        return r;
    char path[4096];
    for (size_t i = 0; i < sizeof(plugins) / sizeof(plugins[0]); i++) {
        struct stat st;
        int n = snprintf(path, sizeof(path), "%s/%s", bin_dir, plugins[i]);
        if (n < 0 || (size_t)n >= sizeof(path))
            return ck_err_set(reterr, CK_EINVAL, "CNI plugin directory path too long: %s", bin_dir);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK) != 0)
            return ck_err_set(reterr, CK_ENOENT,
                              "CNI plugin \"%s\" not found in %s (an executable file; Debian's "
                              "package containernetworking-plugins installs the plugins in %s)",
                              plugins[i], bin_dir, CK_AGENT_CNI_BIN_DIR);
    }
    int n = snprintf(path, sizeof(path), "%s/%s", conf_dir, CNI_FILE);
    if (n < 0 || (size_t)n >= sizeof(path) || (ret_path && (size_t)n >= size))
        return ck_err_set(reterr, CK_EINVAL, "the path of %s/%s is too long", conf_dir, CNI_FILE);
    json_t *conf = config_json(pod_cidr);
    size_t len = 0;
    char *text = conf ? ck__json_dumps(conf, JSON_INDENT(2), &len) : NULL;
    json_decref(conf);
    char *with_nl = text ? ck__realloc(text, len + 2) : NULL;
    if (!with_nl) {
        free(text);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    with_nl[len++] = '\n';
    with_nl[len] = '\0';
    r = make_dirs(conf_dir, 0755);
    if (r < 0) {
        free(with_nl);
        return ck_err_set(reterr, r, "cannot create the CNI configuration directory %s: %s",
                          conf_dir, strerror(-r));
    }
    r = ck__write_file_atomic(path, with_nl, len, 0644);
    free(with_nl);
    if (r < 0)
        return ck_err_set(reterr, r, "cannot write the CNI configuration %s: %s", path,
                          strerror(-r));
    if (ret_path)
        memcpy(ret_path, path, (size_t)n + 1);
    if (ret_written)
        *ret_written = true;
    return 0;
}
