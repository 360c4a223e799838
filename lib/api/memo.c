/*
 * memo.c - the per-thread tables of ck__memo_find() (internal.h): allocated
 * on a thread's first question, so that threads which never walk a schema
 * (the HTTP threads, the store's) carry none, and freed when the thread exits.
 * Only the nodes a set owns are kept.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct memo {
    struct ck__memo_slot slot[CK__MEMO_SLOTS];
};

static pthread_key_t owner;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;

static void make_owner(void)
{
    pthread_key_create(&owner, free); /* the destructor frees a thread's tables */
}

struct ck__memo_slot *ck__memo_find(enum ck__memo_question question, const struct ck_schemas *set,
                                    const json_t *node, bool *hit)
{
    static _Thread_local struct memo *tables; /* CK__MEMO_QUESTIONS of them */
    *hit = false;
    if (!set || !node || !ck__schema_owns(set, node))
        return NULL;
    if (!tables) {
        pthread_once(&owner_once, make_owner);
        tables = ck__calloc(CK__MEMO_QUESTIONS, sizeof(*tables));
        if (!tables || pthread_setspecific(owner, tables) != 0) {
            free(tables);
            tables = NULL;
            return NULL;
        }
    }
    uint64_t serial = ck__schemas_serial(set);
    uintptr_t h = (uintptr_t)node;
    h = (h >> 4) ^ (h >> 14) ^ (uintptr_t)(serial * 0x9E3779B97F4A7C15u);
    struct ck__memo_slot *s = &tables[question].slot[h & (CK__MEMO_SLOTS - 1)];
    *hit = s->serial == serial && s->node == node;
    return s;
}
