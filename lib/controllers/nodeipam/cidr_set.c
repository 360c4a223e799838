/*
 * cidr_set.c - the blocks of one IPv4 cluster CIDR that the node IPAM controller hands
 * out (kubernetes pkg/controller/nodeipam/ipam/cidrset/cidr_set.go).
 *
 * The cluster CIDR a.b.c.d/m cut into blocks of n bits is 2^(n-m) blocks; block i
 * starts at the cluster's base address with i in the bits m..n. A bitmap says which
 * are used; `next` is where the next search starts: AllocateNext takes the first free
 * block from there on (wrapping around) and moves `next` past it, so blocks are handed
 * out in order and a released block waits for its turn. Occupy and Release work on any
 * CIDR overlapping the range: a shorter prefix covers several blocks, a longer one
 * the block it lies in. At most 2^16 blocks (cidrset's clusterSubnetMaxDiff).
 *
 * Invariant: used == the number of set bits. Threading: none; the controller locks.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/nodeipam.h"

#define MAX_BLOCK_BITS 16

struct ck_cidr_set {
    uint32_t base; /* the cluster CIDR's first address, host order */
    int cluster_mask, node_mask;
    size_t size, used, next;
    uint8_t *bits;
};

/* Parses "a.b.c.d/m" into host-order address and prefix length. */
static bool parse_cidr(const char *text, uint32_t *ret_ip, int *ret_mask)
{
    char buf[32];
    const char *slash = text ? strchr(text, '/') : NULL;
    if (!slash || (size_t)(slash - text) >= sizeof(buf) || !slash[1])
        return false;
    memcpy(buf, text, (size_t)(slash - text));
    buf[slash - text] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, buf, &a) != 1)
        return false;
    char *end;
    long m = strtol(slash + 1, &end, 10);
    if (*end || m < 0 || m > 32 || (slash[1] == '0' && slash[2]))
        return false;
    *ret_ip = ntohl(a.s_addr);
    *ret_mask = (int)m;
    return true;
}

static uint32_t mask_of(int bits)
{
    return bits == 0 ? 0 : ~(uint32_t)0 << (32 - bits);
}

int ck_cidr_set_new(const char *cluster_cidr, int node_mask, struct ck_cidr_set **ret,
                    struct ck_err *reterr)
{
    uint32_t ip;
    int mask;
    if (!parse_cidr(cluster_cidr, &ip, &mask))
        return ck_err_set(reterr, CK_EINVAL, "invalid cluster CIDR \"%s\": want an IPv4 CIDR",
                          cluster_cidr ? cluster_cidr : "");
    if (node_mask < mask || node_mask > 32)
        return ck_err_set(reterr, CK_EINVAL,
                          "invalid --cluster-cidr, mask size of cluster CIDR %s must be less "
                          "than or equal to --node-cidr-mask-size %d",
                          cluster_cidr, node_mask);
    if (node_mask - mask > MAX_BLOCK_BITS)
        return ck_err_set(reterr, CK_EINVAL,
                          "new CIDR set failed; the node CIDR size is too big: /%d blocks of %s "
                          "would be more than 2^%d",
                          node_mask, cluster_cidr, MAX_BLOCK_BITS);
    struct ck_cidr_set *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_no_memory(reterr);
    s->base = ip & mask_of(mask);
    s->cluster_mask = mask;
    s->node_mask = node_mask;
    s->size = (size_t)1 << (node_mask - mask);
    s->bits = ck__calloc((s->size + 7) / 8, 1);
    if (!s->bits) {
        free(s);
        return ck_err_no_memory(reterr);
    }
    *ret = s;
    return 0;
}

struct ck_cidr_set *ck_cidr_set_free(struct ck_cidr_set *s)
{
    if (s) {
        free(s->bits);
        free(s);
    }
    return NULL;
}

size_t ck_cidr_set_size(const struct ck_cidr_set *s)
{
    return s->size;
}

size_t ck_cidr_set_used(const struct ck_cidr_set *s)
{
    return s->used;
}

static bool is_used(const struct ck_cidr_set *s, size_t i)
{
    return s->bits[i / 8] & (1u << (i % 8));
}

static void set_bit(struct ck_cidr_set *s, size_t i, bool on)
{
    if (is_used(s, i) == on)
        return;
    s->bits[i / 8] = (uint8_t)(s->bits[i / 8] ^ (1u << (i % 8)));
    if (on)
        s->used++;
    else
        s->used--;
}

int ck_cidr_set_allocate_next(struct ck_cidr_set *s, char *buf, size_t size)
{
    if (s->used == s->size)
        return CK_ENOENT;
    size_t candidate = s->next;
    while (is_used(s, candidate))
        candidate = (candidate + 1) % s->size;
    s->next = (candidate + 1) % s->size;
    set_bit(s, candidate, true);
    uint32_t ip = s->base | (s->node_mask == 0 ? 0 : (uint32_t)candidate << (32 - s->node_mask));
    snprintf(buf, size, "%u.%u.%u.%u/%d", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255,
             s->node_mask);
    return 0;
}

/* The first and last block cidr overlaps. */
static int block_range(const struct ck_cidr_set *s, const char *cidr, size_t *ret_first,
                       size_t *ret_last, struct ck_err *reterr)
{
    uint32_t ip;
    int mask;
    if (!parse_cidr(cidr, &ip, &mask))
        return ck_err_set(reterr, CK_EINVAL, "invalid CIDR \"%s\"", cidr ? cidr : "");
    int common = mask < s->cluster_mask ? mask : s->cluster_mask;
    if ((ip & mask_of(common)) != (s->base & mask_of(common)))
        return ck_err_set(reterr, CK_EINVAL, "cidr %s is out the range of cluster cidr", cidr);
    if (mask <= s->cluster_mask) { /* covers the whole range */
        *ret_first = 0;
        *ret_last = s->size - 1;
        return 0;
    }
    int shift = 32 - s->node_mask;
    uint32_t first = ip & mask_of(mask);
    uint32_t last = first | ~mask_of(mask);
    *ret_first = shift == 32 ? 0 : ((first ^ s->base) >> shift);
    *ret_last = shift == 32 ? 0 : ((last ^ s->base) >> shift);
    if (*ret_last >= s->size) /* cannot happen: the prefix check above bounds it */
        *ret_last = s->size - 1;
    return 0;
}

int ck_cidr_set_occupy(struct ck_cidr_set *s, const char *cidr, struct ck_err *reterr)
{
    size_t first, last;
    int r = block_range(s, cidr, &first, &last, reterr);
    for (size_t i = first; r == 0 && i <= last; i++)
        set_bit(s, i, true);
    return r;
}

int ck_cidr_set_release(struct ck_cidr_set *s, const char *cidr, struct ck_err *reterr)
{
    size_t first, last;
    int r = block_range(s, cidr, &first, &last, reterr);
    for (size_t i = first; r == 0 && i <= last; i++)
        set_bit(s, i, false);
    return r;
}
