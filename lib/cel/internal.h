/*
 * lib/cel/internal.h - private to libckube-cel: never installed, no stable API.
 *
 * The pieces of the CEL library and how they meet:
 *   arena.c   bump allocation for a program's nodes and an evaluation's values, capped
 *   lexer.c   bytes to tokens (literals decoded here: escapes, hex, the u suffix)
 *   parser.c  tokens to an AST of struct ck__cel_node, operators as calls
 *   macros.c  has/all/exists/exists_one/map/filter become select and comprehension nodes
 *   value.c   values: JSON in and out, equality, ordering, formatting
 *   eval.c    the tree walk with error absorption and the cost budget
 *   check.c   the static type checker over declared variables (ck_cel_check)
 *   stdlib.c  cel-spec's standard functions; regex.c (matches, find, findAll); strings.c,
 *             format.c, lists.c, sets.c, optional.c, net.c, quantity.c, authz.c:
 *             Kubernetes' libraries
 *
 * A program's nodes and an evaluation's values live in arenas: values are immutable
 * once built and freely shared inside one evaluation, and all of them go in one free.
 */
#ifndef CKUBE_CEL_INTERNAL_H
#define CKUBE_CEL_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/cel.h"

/* ---- arenas (arena.c) -------------------------------------------------------- */

struct ck__cel_chunk;

struct ck__cel_arena {
    struct ck__cel_chunk *head;
    size_t used;  /* bytes handed out, all chunks */
    size_t limit; /* most bytes it may hand out; 0: no cap */
};

/* n zeroed bytes that live until ck__cel_arena_release(); NULL past the cap or OOM. */
void *ck__cel_alloc(struct ck__cel_arena *a, size_t n);
/* A NUL-terminated copy of n bytes of s. */
char *ck__cel_strndup(struct ck__cel_arena *a, const char *s, size_t n);
void ck__cel_arena_release(struct ck__cel_arena *a);

/* ---- tokens (lexer.c) -------------------------------------------------------- */

enum ck__cel_tok {
    T_EOF,
    T_ERROR,
    T_INT,
    T_UINT,
    T_DOUBLE,
    T_STRING,
    T_BYTES,
    T_IDENT,
    T_TRUE,
    T_FALSE,
    T_NULL,
    T_IN,
    T_LPAREN,
    T_RPAREN,
    T_LBRACKET,
    T_RBRACKET,
    T_LBRACE,
    T_RBRACE,
    T_DOT,
    T_COMMA,
    T_COLON,
    T_QUESTION,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PERCENT,
    T_NOT,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_AND,
    T_OR,
};

struct ck__cel_token {
    enum ck__cel_tok kind;
    size_t pos, len; /* where in the source */
    /* decoded value of a literal */
    uint64_t u;        /* T_INT (the magnitude, as written), T_UINT */
    double d;          /* T_DOUBLE */
    char *s;           /* T_STRING, T_BYTES (arena), T_ERROR (the message, static) */
    size_t slen;       /* its length */
    bool int_overflow; /* T_INT above INT64_MAX (valid only after a '-' for INT64_MIN) */
    bool reserved;     /* T_IDENT that is a reserved word: fine after '.', not alone */
};

struct ck__cel_lexer {
    const char *src;
    size_t len, pos;
    struct ck__cel_arena *arena;
};

/* The next token; a T_ERROR token says what is wrong at its position. */
void ck__cel_lex(struct ck__cel_lexer *lx, struct ck__cel_token *ret);

/* ---- the syntax tree (parser.c, macros.c) ------------------------------------ */

enum ck__cel_nkind {
    N_NULL,
    N_BOOL,
    N_INT,
    N_UINT,
    N_DOUBLE,
    N_STRING,
    N_BYTES,
    N_IDENT,
    N_SELECT,
    N_CALL,
    N_LIST,
    N_MAP,
    N_COMPREHENSION,
};

/* Operators are calls with one of these; named functions are OP_FUNC. */
enum ck__cel_op {
    OP_FUNC,
    OP_COND,
    OP_AND,
    OP_OR,
    OP_NOT,
    OP_NEG,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_INDEX,
    OP_OPT_INDEX, /* a[?k] */
    OP_OPT_MARK,  /* ?e in a list literal, ?k: e in a map literal: args[0] is e */
};

enum ck__cel_macro {
    M_ALL,
    M_EXISTS,
    M_EXISTS_ONE,
    M_MAP,
    M_FILTER,
    M_OPT_MAP,      /* o.optMap(x, f) */
    M_OPT_FLAT_MAP, /* o.optFlatMap(x, f) */
};

struct ck__cel_eval;
struct ck__cel_val;
struct ck__cel_node;

/* A function: args[0] is the receiver of a member call. Returns a value or an error value. */
typedef struct ck__cel_val *(*ck__cel_fn)(struct ck__cel_eval *ev, const struct ck__cel_node *call,
                                          struct ck__cel_val **args, size_t nargs);

#define CK__CEL_GLOBAL 1 /* callable as f(x) */
#define CK__CEL_MEMBER 2 /* callable as x.f() */

struct ck__cel_func {
    const char *name;
    unsigned style;    /* CK__CEL_GLOBAL | CK__CEL_MEMBER */
    unsigned min, max; /* argument counts, the receiver included */
    ck__cel_fn fn;
    /* its overloads for the type checker (check.c): `(string)->int;list(A).()->int` */
    const char *sig;
};

struct ck__cel_node {
    enum ck__cel_nkind kind;
    unsigned height; /* 1 + the tallest child's: bounds the evaluator's recursion */
    size_t pos;      /* byte offset in the source, for messages */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        struct {
            char *p;
            size_t len;
        } str;      /* N_STRING, N_BYTES */
        char *name; /* N_IDENT */
        struct {
            struct ck__cel_node *operand;
            char *field;
            bool test_only; /* has(operand.field) */
            bool optional;  /* operand.?field */
        } sel;
        struct {
            enum ck__cel_op op;
            char *name;                    /* OP_FUNC */
            bool member;                   /* x.f(...): args[0] is x */
            const struct ck__cel_func *fn; /* resolved by macros.c */
            struct ck__cel_node **args;
            size_t nargs;
            void *cache; /* a regex compiled at compile time (stdlib.c), or NULL */
        } call;
        struct {
            struct ck__cel_node **items;
            size_t n;
        } list;
        struct {
            struct ck__cel_node **keys, **vals;
            size_t n;
        } map;
        struct {
            enum ck__cel_macro macro;
            char *var;
            struct ck__cel_node *range, *pred, *fn; /* fn: map's transform */
        } comp;
    };
};

/* The tallest tree the evaluator walks (long operator chains and selections). */
#define CK__CEL_MAX_HEIGHT 1000

struct ck__cel_parser {
    struct ck_cel_program *prog; /* what compiled regexes are registered with */
    struct ck__cel_lexer lx;
    struct ck__cel_token tok; /* the current token */
    struct ck__cel_arena *arena;
    unsigned depth;
    size_t nodes;
    char *err;      /* the first error's message (arena), NULL while none */
    size_t err_pos; /* and where */
};

struct ck__cel_node *ck__cel_node_new(struct ck__cel_parser *p, enum ck__cel_nkind kind,
                                      size_t pos);
/* Sets n's height from its children's; false (error recorded) past CK__CEL_MAX_HEIGHT. */
bool ck__cel_node_done(struct ck__cel_parser *p, struct ck__cel_node *n);
/* Records the first error (printf-style); returns NULL so that failing is one line. */
void *ck__cel_parse_error(struct ck__cel_parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The whole expression, or NULL with p->err set. */
struct ck__cel_node *ck__cel_parse(struct ck__cel_parser *p);

/* A call of a macro's name, rewritten (or left alone when it is not a macro's shape). */
struct ck__cel_node *ck__cel_expand_macro(struct ck__cel_parser *p, struct ck__cel_node *call);

/* Resolves every OP_FUNC call of the tree to a library function; false with p->err. */
bool ck__cel_resolve(struct ck__cel_parser *p, struct ck__cel_node *n);

/* The function called name in this style with nargs arguments (receiver included). */
const struct ck__cel_func *ck__cel_lookup(const char *name, bool member, size_t nargs);
/* Every library entry called name (at most max of them into ret): how many. */
size_t ck__cel_named(const char *name, const struct ck__cel_func **ret, size_t max);

/* Appends "ERROR: <input>:L:C: msg", the line and a caret under the column to b (parser.c). */
struct ck__buf;
void ck__cel_report(struct ck__buf *b, const char *src, size_t len, size_t pos, const char *msg);

struct ck_cel_program {
    struct ck__cel_arena arena;
    struct ck__cel_node *root;
    char *source;  /* the expression (NUL-terminated), for the checker's messages */
    void **caches; /* what the call nodes' caches hold, freed with the program */
    size_t ncaches;
};

/* ---- values (value.c) -------------------------------------------------------- */

#define CK__CEL_ERROR 100 /* an error value: its message travels until absorbed or returned */

struct ck__cel_val {
    int type; /* enum ck_cel_type, or CK__CEL_ERROR */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        struct {
            const char *p; /* NUL-terminated */
            size_t len;    /* bytes */
        } s;               /* string, bytes; a type's name; an error's message */
        struct {
            struct ck__cel_val **v;
            size_t n;
        } list;
        struct {
            struct ck__cel_val **k, **v;
            size_t n;
        } map;
        struct {
            int64_t sec;
            int32_t nsec;
        } t;                     /* duration, timestamp */
        struct ck__cel_val *opt; /* an optional's value, NULL for none */
        struct {
            unsigned char a[16]; /* network byte order; IPv4 in the first 4 */
            uint8_t family;      /* 4 or 6 */
            uint8_t bits;        /* a CIDR's prefix length */
        } ip;                    /* net.IP, net.CIDR (net.c) */
        struct {
            __int128 m; /* no trailing zeros (0 with e 0), so equal values are equal */
            int32_t e;
        } q;                               /* a quantity, m x 10^e (quantity.c) */
        const struct ck__cel_authz *authz; /* CK_CEL_OBJECT (authz.c) */
    };
};

/* One evaluation. */
struct ck__cel_scope {
    const char *name;
    struct ck__cel_val *val;
    struct ck__cel_scope *up;
};

struct ck__cel_eval {
    struct ck__cel_arena *arena;
    const struct ck_cel_var *vars;
    size_t nvars;
    struct ck__cel_val **var_vals; /* converted on first use */
    struct ck__cel_scope *scope;   /* comprehension variables */
    uint64_t cost, limit;
    int fatal; /* 0, CK_CEL_ECOST or CK_ENOMEM: stops everything, absorbs nothing */
};

extern struct ck__cel_val ck__cel_null, ck__cel_true, ck__cel_false;

/* Adds n to the cost; false (and ev->fatal set) past the limit. */
bool ck__cel_charge(struct ck__cel_eval *ev, uint64_t n);

/* The value that stands for ev->fatal (its message names the budget or memory). */
struct ck__cel_val *ck__cel_fatal(struct ck__cel_eval *ev);
/* After an arena allocation of n bytes failed: sets ev->fatal (the memory limit when the
 * arena is near its cap, else out of memory) and returns its value. */
struct ck__cel_val *ck__cel_alloc_failed(struct ck__cel_eval *ev, size_t n);
struct ck__cel_val *ck__cel_new(struct ck__cel_eval *ev, int type);
struct ck__cel_val *ck__cel_bool(bool b);
struct ck__cel_val *ck__cel_int(struct ck__cel_eval *ev, int64_t i);
struct ck__cel_val *ck__cel_uint(struct ck__cel_eval *ev, uint64_t u);
struct ck__cel_val *ck__cel_double(struct ck__cel_eval *ev, double d);
/* A string or bytes value copying n bytes of s (type CK_CEL_STRING or CK_CEL_BYTES). */
struct ck__cel_val *ck__cel_str(struct ck__cel_eval *ev, int type, const char *s, size_t n);
struct ck__cel_val *ck__cel_type_val(struct ck__cel_eval *ev, const char *name);
struct ck__cel_val *ck__cel_list(struct ck__cel_eval *ev, size_t n);
struct ck__cel_val *ck__cel_map(struct ck__cel_eval *ev, size_t n);
struct ck__cel_val *ck__cel_errorf(struct ck__cel_eval *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "no such overload" naming the function and the argument types. */
struct ck__cel_val *ck__cel_no_overload(struct ck__cel_eval *ev, const char *fn,
                                        struct ck__cel_val **args, size_t nargs);

/* Whether a duration fits Go's time.Duration (int64 nanoseconds), as cel-go's must. */
static inline bool ck__cel_duration_ok(int64_t sec, int64_t nsec)
{
    __int128 total = (__int128)sec * 1000000000 + nsec;
    return total >= INT64_MIN && total <= INT64_MAX;
}

static inline bool ck__cel_is_error(const struct ck__cel_val *v)
{
    return v->type == CK__CEL_ERROR;
}

/* The CEL name of v's type: "int", "list", "google.protobuf.Duration", ... */
const char *ck__cel_type_name(const struct ck__cel_val *v);

/*
 * JSON to a value (Kubernetes' mapping); NULL with ev->fatal when out of budget. With a
 * schema (may be NULL), values are typed by it as Kubernetes' UnstructuredToVal types
 * them: strings of format byte, duration, date and date-time are bytes, durations and
 * timestamps, and an object's properties are keyed by their escaped names.
 */
struct ck__cel_val *ck__cel_from_json(struct ck__cel_eval *ev, const json_t *j,
                                      const json_t *schema, int depth);
/* apiserver's cel.Escape: appends name as a CEL identifier to out; false when it has none. */
bool ck__cel_escape(const char *name, struct ck__buf *out);
json_t *ck__cel_to_json(const struct ck__cel_val *v, int *ret_err);

/*
 * Heterogeneous equality (cel-spec): numbers compare by value across int, uint and
 * double; values of different types are unequal; lists and maps compare deeply.
 * Returns 1, 0, or -1 when an element comparison errs (never does today).
 */
bool ck__cel_equal(const struct ck__cel_val *a, const struct ck__cel_val *b);
/* Ordering: sets *ret (-1, 0, 1) and returns true, false when a and b do not order. */
bool ck__cel_compare(const struct ck__cel_val *a, const struct ck__cel_val *b, int *ret);
/* The map's value for key, NULL when absent (numeric keys compare by value). */
struct ck__cel_val *ck__cel_map_get(const struct ck__cel_val *map, const struct ck__cel_val *key);

/* Appends v written as a CEL literal to b (value.c). */
struct ck__buf;
void ck__cel_format(struct ck__buf *b, const struct ck__cel_val *v);
/* Go's strconv.FormatFloat(d, 'g', -1, 64) into buf (32 bytes is enough). */
void ck__cel_format_double(double d, char *buf, size_t size);
/* A duration as Go's time.Duration.String() gives it ("1h2m3.5s"), into buf (48 bytes). */
void ck__cel_format_duration(int64_t sec, int32_t nsec, char *buf, size_t size);
/* A timestamp as RFC 3339 with nanoseconds when not zero, into buf (48 bytes). */
void ck__cel_format_timestamp(int64_t sec, int32_t nsec, char *buf, size_t size);

/* Code points of the UTF-8 text s (invalid bytes count one each). */
size_t ck__cel_utf8_len(const char *s, size_t n);
/* Whether s is valid UTF-8. */
bool ck__cel_utf8_valid(const char *s, size_t n);

/* optional.of(v) (v NULL: optional.none()). */
struct ck__cel_val *ck__cel_optional(struct ck__cel_eval *ev, struct ck__cel_val *v);
/* Whether v is its type's zero value (optional.ofNonZeroValue). */
bool ck__cel_is_zero(const struct ck__cel_val *v);

/* ---- evaluation (eval.c) ----------------------------------------------------- */

struct ck__cel_val *ck__cel_eval_node(struct ck__cel_eval *ev, const struct ck__cel_node *n);

/* ---- libraries (stdlib.c, strings.c, lists.c) --------------------------------- */

extern const struct ck__cel_func ck__cel_stdlib[];
extern const size_t ck__cel_stdlib_len;
extern const struct ck__cel_func ck__cel_strings_lib[];
extern const size_t ck__cel_strings_lib_len;
extern const struct ck__cel_func ck__cel_regex_lib[];
extern const size_t ck__cel_regex_lib_len;
extern const struct ck__cel_func ck__cel_format_lib[];
extern const size_t ck__cel_format_lib_len;
extern const struct ck__cel_func ck__cel_quantity_lib[];
extern const size_t ck__cel_quantity_lib_len;
bool ck__cel_quantity_equal(const struct ck__cel_val *a, const struct ck__cel_val *b);
/* A quantity's exact value as decimal text, into buf (64 bytes). */
void ck__cel_format_quantity(const struct ck__cel_val *v, char *buf, size_t size);
extern const struct ck__cel_func ck__cel_net_lib[];
extern const size_t ck__cel_net_lib_len;
/* An IP or CIDR as netip writes it, into buf (64 bytes). */
void ck__cel_format_net(const struct ck__cel_val *v, char *buf, size_t size);
extern const struct ck__cel_func ck__cel_sets_lib[];
extern const size_t ck__cel_sets_lib_len;
extern const struct ck__cel_func ck__cel_optional_lib[];
extern const size_t ck__cel_optional_lib_len;
extern const struct ck__cel_func ck__cel_lists_lib[];
extern const size_t ck__cel_lists_lib_len;
extern const struct ck__cel_func ck__cel_authz_lib[];
extern const size_t ck__cel_authz_lib_len;

/* The Authorizer object of a variable that has one (authz.c). */
struct ck__cel_val *ck__cel_authorizer(struct ck__cel_eval *ev, const struct ck_cel_authorizer *az);
/* authorizer.requestResource, or NULL when o is no Authorizer with a request resource. */
struct ck__cel_val *ck__cel_request_resource(struct ck__cel_eval *ev, const struct ck__cel_val *o);
/* The CEL type name of an authorizer library object: "kubernetes.authorization.Decision". */
const char *ck__cel_authz_type_name(const struct ck__cel_val *v);

/* list.indexOf(x) and list.lastIndexOf(x) (lists.c), reached through the strings' entries. */
struct ck__cel_val *ck__cel_list_index(struct ck__cel_eval *ev, struct ck__cel_val **args,
                                       bool last);

/* Duration and timestamp text (stdlib.c). */
bool ck__cel_parse_duration(const char *s, size_t n, int64_t *ret_sec, int32_t *ret_nsec);
bool ck__cel_parse_timestamp(const char *s, int64_t *ret_sec, int32_t *ret_nsec);

#endif /* CKUBE_CEL_INTERNAL_H */
