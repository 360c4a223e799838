/*
 * net.c - Kubernetes' IP and CIDR libraries for CEL (k8s.io/apiserver/pkg/cel/library
 * ip.go and cidr.go, enabled from Kubernetes 1.30): ip(s), isIP(s), ip.isCanonical(s),
 * and on an IP family(), isUnspecified(), isLoopback(), isLinkLocalMulticast(),
 * isLinkLocalUnicast(), isGlobalUnicast(); cidr(s), isCIDR(s), and on a CIDR
 * containsIP(ip or string), containsCIDR(cidr or string), ip(), masked(),
 * prefixLength(); string() of either.
 *
 * Addresses are read as Go's netip.ParseAddr reads them, through libc's inet_pton
 * (which also refuses IPv4 octets with leading zeros), and refused as Kubernetes refuses
 * them: an IPv4-mapped IPv6 address and a zone (%eth0) are errors. They are written as
 * netip writes them: dotted IPv4, RFC 5952 IPv6 (lowercase, the first longest run of
 * two or more zero groups as ::). A CIDR keeps its address as written ("10.0.0.1/8"
 * is a valid CIDR; masked() clears the host bits).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define FN(name)                                                                                   \
    static struct ck__cel_val *name(struct ck__cel_eval *ev, const struct ck__cel_node *call,      \
                                    struct ck__cel_val **args, size_t nargs)
#define NO_OVERLOAD() ck__cel_no_overload(ev, call->call.name, args, nargs)

/* Parses an address; NULL on success, else why not. */
static const char *parse_ip(const char *s, size_t n, struct ck__cel_val *ret)
{
    char buf[64];
    if (n == 0 || n >= sizeof(buf) || memchr(s, '\0', n))
        return "invalid IP address";
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strchr(buf, '%'))
        return "IP address with zone value is not allowed";
    memset(ret->ip.a, 0, sizeof(ret->ip.a));
    if (inet_pton(AF_INET, buf, ret->ip.a) == 1) {
        ret->ip.family = 4;
        return NULL;
    }
    if (inet_pton(AF_INET6, buf, ret->ip.a) == 1) {
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (!memcmp(ret->ip.a, mapped, sizeof(mapped)))
            return "IPv4-mapped IPv6 address is not allowed";
        ret->ip.family = 6;
        return NULL;
    }
    return "invalid IP address";
}

/* Parses "addr/bits"; NULL on success, else why not. */
static const char *parse_cidr(const char *s, size_t n, struct ck__cel_val *ret)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return "invalid CIDR: no '/'";
    const char *why = parse_ip(s, (size_t)(slash - s), ret);
    if (why)
        return why;
    const char *d = slash + 1, *end = s + n;
    unsigned bits = 0;
    if (d == end || (*d == '0' && end - d > 1))
        return "invalid CIDR prefix length";
    for (; d < end; d++) {
        if (*d < '0' || *d > '9' || bits > 128)
            return "invalid CIDR prefix length";
        bits = bits * 10 + (unsigned)(*d - '0');
    }
    if (bits > (ret->ip.family == 4 ? 32u : 128u))
        return "invalid CIDR prefix length";
    ret->ip.bits = (uint8_t)bits;
    return NULL;
}

static void format_ip(const struct ck__cel_val *v, char *buf, size_t size)
{
    const unsigned char *a = v->ip.a;
    if (v->ip.family == 4) {
        snprintf(buf, size, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
        return;
    }
    unsigned g[8];
    for (int i = 0; i < 8; i++)
        g[i] = (unsigned)(a[2 * i] << 8 | a[2 * i + 1]);
    int best = -1, best_len = 0;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && g[j] == 0)
            j++;
        if (j - i > best_len && j - i >= 2) {
            best = i;
            best_len = j - i;
        }
        i = j > i ? j : i + 1;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < 8 && len < size; i++) {
        if (i == best) {
            len += (size_t)snprintf(buf + len, size - len, "::");
            i += best_len - 1;
            continue;
        }
        len += (size_t)snprintf(buf + len, size - len, "%s%x",
                                i && !(best >= 0 && i == best + best_len) ? ":" : "", g[i]);
    }
}

void ck__cel_format_net(const struct ck__cel_val *v, char *buf, size_t size)
{
    format_ip(v, buf, size);
    if (v->type == CK_CEL_CIDR) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "/%u", v->ip.bits);
    }
}

static struct ck__cel_val *make(struct ck__cel_eval *ev, int type, const struct ck__cel_val *from)
{
    struct ck__cel_val *v = ck__cel_new(ev, type);
    if (!ck__cel_is_error(v))
        v->ip = from->ip;
    return v;
}

static struct ck__cel_val *to_ip(struct ck__cel_eval *ev, const struct ck__cel_val *s, bool cidr)
{
    struct ck__cel_val tmp = {0};
    const char *why = cidr ? parse_cidr(s->s.p, s->s.len, &tmp) : parse_ip(s->s.p, s->s.len, &tmp);
    if (why)
        return ck__cel_errorf(ev, "network address parse error during conversion from string: %s",
                              why);
    return make(ev, cidr ? CK_CEL_CIDR : CK_CEL_IP, &tmp);
}

FN(fn_ip)
{
    if (args[0]->type == CK_CEL_CIDR) { /* cidr.ip() */
        struct ck__cel_val *v = make(ev, CK_CEL_IP, args[0]);
        if (!ck__cel_is_error(v))
            v->ip.bits = 0;
        return v;
    }
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    return to_ip(ev, args[0], false);
}

FN(fn_cidr)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    return to_ip(ev, args[0], true);
}

FN(fn_is_ip)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    struct ck__cel_val tmp;
    return ck__cel_bool(parse_ip(args[0]->s.p, args[0]->s.len, &tmp) == NULL);
}

FN(fn_is_cidr)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    struct ck__cel_val tmp;
    return ck__cel_bool(parse_cidr(args[0]->s.p, args[0]->s.len, &tmp) == NULL);
}

FN(fn_is_canonical)
{
    if (args[0]->type != CK_CEL_STRING)
        return NO_OVERLOAD();
    struct ck__cel_val tmp = {.type = CK_CEL_IP};
    const char *why = parse_ip(args[0]->s.p, args[0]->s.len, &tmp);
    if (why)
        return ck__cel_errorf(ev, "network address parse error: %s", why);
    char buf[64];
    format_ip(&tmp, buf, sizeof(buf));
    return ck__cel_bool(strlen(buf) == args[0]->s.len &&
                        !memcmp(buf, args[0]->s.p, args[0]->s.len));
}

FN(fn_family)
{
    if (args[0]->type != CK_CEL_IP)
        return NO_OVERLOAD();
    return ck__cel_int(ev, args[0]->ip.family);
}

enum kind { UNSPECIFIED, LOOPBACK, LL_MULTICAST, LL_UNICAST, GLOBAL_UNICAST };

/* netip's classification of an address. */
static bool is_kind(const struct ck__cel_val *v, enum kind k)
{
    const unsigned char *a = v->ip.a;
    static const unsigned char zero[16];
    if (v->ip.family == 4) {
        switch (k) {
        case UNSPECIFIED:
            return !memcmp(a, zero, 4);
        case LOOPBACK:
            return a[0] == 127;
        case LL_MULTICAST:
            return a[0] == 224 && a[1] == 0 && a[2] == 0;
        case LL_UNICAST:
            return a[0] == 169 && a[1] == 254;
        case GLOBAL_UNICAST:
            return memcmp(a, zero, 4) && a[0] != 127 && !(a[0] == 169 && a[1] == 254) &&
                   a[0] < 224 && !(a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255);
        }
    }
    bool unspecified = !memcmp(a, zero, 16);
    bool loopback = !memcmp(a, zero, 15) && a[15] == 1;
    switch (k) {
    case UNSPECIFIED:
        return unspecified;
    case LOOPBACK:
        return loopback;
    case LL_MULTICAST:
        return a[0] == 0xff && (a[1] & 0x0f) == 0x02;
    case LL_UNICAST:
        return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
    case GLOBAL_UNICAST:
        return !unspecified && !loopback && a[0] != 0xff &&
               !(a[0] == 0xfe && (a[1] & 0xc0) == 0x80);
    }
    return false;
}

#define PREDICATE(fname, k)                                                                        \
    FN(fname)                                                                                      \
    {                                                                                              \
        if (args[0]->type != CK_CEL_IP)                                                            \
            return NO_OVERLOAD();                                                                  \
        return ck__cel_bool(is_kind(args[0], k));                                                  \
    }
PREDICATE(fn_is_unspecified, UNSPECIFIED)
PREDICATE(fn_is_loopback, LOOPBACK)
PREDICATE(fn_is_ll_multicast, LL_MULTICAST)
PREDICATE(fn_is_ll_unicast, LL_UNICAST)
PREDICATE(fn_is_global_unicast, GLOBAL_UNICAST)

/* Whether the first bits of a and b agree. */
static bool prefix_equal(const unsigned char *a, const unsigned char *b, unsigned bits)
{
    unsigned bytes = bits / 8, rest = bits % 8;
    if (memcmp(a, b, bytes))
        return false;
    if (!rest)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[bytes] & mask) == (b[bytes] & mask);
}

/* The argument as an IP or CIDR value (a string is parsed), or an error value. */
static struct ck__cel_val *operand(struct ck__cel_eval *ev, struct ck__cel_val *v, int type)
{
    if (v->type == type)
        return v;
    if (v->type == CK_CEL_STRING)
        return to_ip(ev, v, type == CK_CEL_CIDR);
    return NULL;
}

FN(fn_contains_ip)
{
    struct ck__cel_val *ip = args[0]->type == CK_CEL_CIDR ? operand(ev, args[1], CK_CEL_IP) : NULL;
    if (!ip)
        return NO_OVERLOAD();
    if (ck__cel_is_error(ip))
        return ip;
    const struct ck__cel_val *c = args[0];
    return ck__cel_bool(ip->ip.family == c->ip.family &&
                        prefix_equal(ip->ip.a, c->ip.a, c->ip.bits));
}

FN(fn_contains_cidr)
{
    struct ck__cel_val *o = args[0]->type == CK_CEL_CIDR ? operand(ev, args[1], CK_CEL_CIDR) : NULL;
    if (!o)
        return NO_OVERLOAD();
    if (ck__cel_is_error(o))
        return o;
    const struct ck__cel_val *c = args[0];
    return ck__cel_bool(o->ip.family == c->ip.family && o->ip.bits >= c->ip.bits &&
                        prefix_equal(o->ip.a, c->ip.a, c->ip.bits));
}

FN(fn_masked)
{
    if (args[0]->type != CK_CEL_CIDR)
        return NO_OVERLOAD();
    struct ck__cel_val *v = make(ev, CK_CEL_CIDR, args[0]);
    if (ck__cel_is_error(v))
        return v;
    for (unsigned i = 0; i < 16; i++) {
        unsigned lo = i * 8;
        if (lo >= v->ip.bits)
            v->ip.a[i] = 0;
        else if (lo + 8 > v->ip.bits)
            v->ip.a[i] &= (unsigned char)(0xff << (8 - (v->ip.bits - lo)));
    }
    return v;
}

FN(fn_prefix_length)
{
    if (args[0]->type != CK_CEL_CIDR)
        return NO_OVERLOAD();
    return ck__cel_int(ev, args[0]->ip.bits);
}

#define G CK__CEL_GLOBAL
#define M CK__CEL_MEMBER

/* Overloads of the functions below for the type checker (check.c). */
#define CONTAINS_C_I_D_R_SIG "net.CIDR.(net.CIDR)->bool;net.CIDR.(string)->bool"

const struct ck__cel_func ck__cel_net_lib[] = {
    {"ip", G | M, 1, 1, fn_ip, "(string)->net.IP;net.CIDR.()->net.IP"},
    {"cidr", G, 1, 1, fn_cidr, "(string)->net.CIDR"},
    {"isIP", G, 1, 1, fn_is_ip, "(string)->bool"},
    {"isCIDR", G, 1, 1, fn_is_cidr, "(string)->bool"},
    {"ip.isCanonical", G, 1, 1, fn_is_canonical, "(string)->bool"},
    {"family", M, 1, 1, fn_family, "net.IP.()->int"},
    {"isUnspecified", M, 1, 1, fn_is_unspecified, "net.IP.()->bool"},
    {"isLoopback", M, 1, 1, fn_is_loopback, "net.IP.()->bool"},
    {"isLinkLocalMulticast", M, 1, 1, fn_is_ll_multicast, "net.IP.()->bool"},
    {"isLinkLocalUnicast", M, 1, 1, fn_is_ll_unicast, "net.IP.()->bool"},
    {"isGlobalUnicast", M, 1, 1, fn_is_global_unicast, "net.IP.()->bool"},
    {"containsIP", M, 2, 2, fn_contains_ip, "net.CIDR.(net.IP)->bool;net.CIDR.(string)->bool"},
    {"containsCIDR", M, 2, 2, fn_contains_cidr, CONTAINS_C_I_D_R_SIG},
    {"masked", M, 1, 1, fn_masked, "net.CIDR.()->net.CIDR"},
    {"prefixLength", M, 1, 1, fn_prefix_length, "net.CIDR.()->int"},
};
const size_t ck__cel_net_lib_len = sizeof(ck__cel_net_lib) / sizeof(ck__cel_net_lib[0]);
