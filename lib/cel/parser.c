/*
 * parser.c - CEL tokens to a syntax tree, and ck_cel_compile() (google/cel-spec
 * doc/langdef.md "Syntax", and its ANTLR grammar CEL.g4).
 *
 * Recursive descent, one function per precedence level, lowest first:
 *   expr     = or ["?" or ":" expr]                     (right to left)
 *   or       = and {"||" and};  and = rel {"&&" rel}
 *   rel      = add {("<"|"<="|">="|">"|"=="|"!="|"in") add}
 *   add      = mul {("+"|"-") mul};  mul = unary {("*"|"/"|"%") unary}
 *   unary    = member | "!"+ member | "-"+ member        (an even run is a no-op)
 *   member   = primary {"." IDENT ["(" args ")"] | "[" expr "]"}
 *   primary  = ["."] IDENT ["(" args ")"] | "(" expr ")" | "[" list "]" | "{" map "}"
 *            | literal
 * Optional syntax (Kubernetes 1.29+): a.?f, a[?k], [?e] and {?k: v}.
 * Operators become calls (struct ck__cel_node's call.op), as in cel-go's AST; a '-'
 * right before a number literal is part of the literal, so -9223372036854775808 is an
 * int. Message construction (Type{field: ...}) has no types to build here and is
 * refused. Nesting is bounded by CK_CEL_MAX_DEPTH, the tree's height by
 * CK__CEL_MAX_HEIGHT and its size by CK_CEL_MAX_NODES, so that no input can exhaust the
 * stack of the parser or of the evaluator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

static struct ck__cel_node *expr(struct ck__cel_parser *p);

struct ck__cel_node *ck__cel_node_new(struct ck__cel_parser *p, enum ck__cel_nkind kind, size_t pos)
{
    if (++p->nodes > CK_CEL_MAX_NODES)
        return ck__cel_parse_error(p, pos, "expression has more than %d nodes", CK_CEL_MAX_NODES);
    struct ck__cel_node *n = ck__cel_alloc(p->arena, sizeof(*n));
    if (!n)
        return ck__cel_parse_error(p, pos, "out of memory");
    n->kind = kind;
    n->pos = pos;
    n->height = 1;
    return n;
}

void *ck__cel_parse_error(struct ck__cel_parser *p, size_t pos, const char *fmt, ...)
{
    if (p->err)
        return NULL;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->err = ck__cel_strndup(p->arena, msg, strlen(msg));
    if (!p->err)
        p->err = "out of memory";
    p->err_pos = pos;
    return NULL;
}

static void grow(unsigned *h, const struct ck__cel_node *c)
{
    if (c && c->height + 1 > *h)
        *h = c->height + 1;
}

bool ck__cel_node_done(struct ck__cel_parser *p, struct ck__cel_node *n)
{
    unsigned h = 1;
    switch (n->kind) {
    case N_SELECT:
        grow(&h, n->sel.operand);
        break;
    case N_CALL:
        for (size_t i = 0; i < n->call.nargs; i++)
            grow(&h, n->call.args[i]);
        break;
    case N_LIST:
        for (size_t i = 0; i < n->list.n; i++)
            grow(&h, n->list.items[i]);
        break;
    case N_MAP:
        for (size_t i = 0; i < n->map.n; i++) {
            grow(&h, n->map.keys[i]);
            grow(&h, n->map.vals[i]);
        }
        break;
    case N_COMPREHENSION:
        grow(&h, n->comp.range);
        grow(&h, n->comp.pred);
        grow(&h, n->comp.fn);
        break;
    default:
        break;
    }
    n->height = h;
    if (h > CK__CEL_MAX_HEIGHT) {
        ck__cel_parse_error(p, n->pos, "expression nested deeper than %d", CK__CEL_MAX_HEIGHT);
        return false;
    }
    return true;
}

static void next(struct ck__cel_parser *p)
{
    ck__cel_lex(&p->lx, &p->tok);
}

static const char *tok_text(struct ck__cel_parser *p, char *buf, size_t size)
{
    if (p->tok.kind == T_EOF)
        return "<EOF>";
    size_t n = p->tok.len < size - 1 ? p->tok.len : size - 1;
    if (n > 40)
        n = 40;
    memcpy(buf, p->lx.src + p->tok.pos, n);
    buf[n] = '\0';
    return buf;
}

/* Fails on the current token: the lexer's own message, or "unexpected". */
static void *unexpected(struct ck__cel_parser *p, const char *wanted)
{
    if (p->tok.kind == T_ERROR && strcmp(p->tok.s, "out of memory") == 0)
        return ck__cel_parse_error(p, p->tok.pos, "out of memory"); /* CK_ENOMEM, no syntax */
    if (p->tok.kind == T_ERROR)
        return ck__cel_parse_error(p, p->tok.pos, "Syntax error: %s", p->tok.s);
    char buf[64];
    if (wanted)
        return ck__cel_parse_error(p, p->tok.pos,
                                   "Syntax error: mismatched input '%s' expecting %s",
                                   tok_text(p, buf, sizeof(buf)), wanted);
    return ck__cel_parse_error(p, p->tok.pos, "Syntax error: extraneous input '%s'",
                               tok_text(p, buf, sizeof(buf)));
}

static bool expect(struct ck__cel_parser *p, enum ck__cel_tok kind, const char *wanted)
{
    if (p->tok.kind != kind) {
        unexpected(p, wanted);
        return false;
    }
    next(p);
    return true;
}

static struct ck__cel_node *call_node(struct ck__cel_parser *p, enum ck__cel_op op, size_t pos,
                                      size_t nargs, struct ck__cel_node *a, struct ck__cel_node *b,
                                      struct ck__cel_node *c)
{
    struct ck__cel_node *n = ck__cel_node_new(p, N_CALL, pos);
    if (!n)
        return NULL;
    n->call.op = op;
    n->call.nargs = nargs;
    n->call.args = ck__cel_alloc(p->arena, 3 * sizeof(*n->call.args));
    if (!n->call.args)
        return ck__cel_parse_error(p, pos, "out of memory");
    n->call.args[0] = a;
    n->call.args[1] = b;
    n->call.args[2] = c;
    return ck__cel_node_done(p, n) ? n : NULL;
}

/* Items separated by commas up to `close`; a trailing comma when `trailing`. */
static bool expr_list(struct ck__cel_parser *p, enum ck__cel_tok close, bool trailing,
                      struct ck__cel_node ***ret_items, size_t *ret_n, const char *closer)
{
    struct ck__cel_node **items = NULL;
    size_t n = 0, cap = 0;
    while (p->tok.kind != close) {
        /* a list literal's optional element, ?e: kept when e has a value */
        size_t opt_pos = p->tok.pos;
        bool optional = trailing && p->tok.kind == T_QUESTION;
        if (optional)
            next(p);
        struct ck__cel_node *e = expr(p);
        if (e && optional)
            e = call_node(p, OP_OPT_MARK, opt_pos, 1, e, NULL, NULL);
        if (!e)
            return false;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            struct ck__cel_node **grown = ck__cel_alloc(p->arena, ncap * sizeof(*grown));
            if (!grown) {
                ck__cel_parse_error(p, e->pos, "out of memory");
                return false;
            }
            if (n)
                memcpy(grown, items, n * sizeof(*grown));
            items = grown;
            cap = ncap;
        }
        items[n++] = e;
        if (p->tok.kind == T_COMMA) {
            next(p);
            if (!trailing && p->tok.kind == close) {
                unexpected(p, "an expression");
                return false;
            }
            continue;
        }
        if (p->tok.kind != close) {
            unexpected(p, closer);
            return false;
        }
    }
    next(p);
    *ret_items = items;
    *ret_n = n;
    return true;
}

static struct ck__cel_node *finish_call(struct ck__cel_parser *p, struct ck__cel_node *target,
                                        const char *name)
{
    struct ck__cel_node **args;
    size_t n;
    size_t pos = p->tok.pos; /* a call is where its '(' is, as cel-go places it */
    next(p);
    if (!expr_list(p, T_RPAREN, false, &args, &n, "')'"))
        return NULL;
    struct ck__cel_node *c = ck__cel_node_new(p, N_CALL, pos);
    if (!c)
        return NULL;
    c->call.op = OP_FUNC;
    c->call.name = (char *)name;
    c->call.member = target != NULL;
    c->call.nargs = n + (target ? 1 : 0);
    c->call.args = ck__cel_alloc(p->arena, (c->call.nargs + 1) * sizeof(*c->call.args));
    if (!c->call.args)
        return ck__cel_parse_error(p, pos, "out of memory");
    if (target)
        c->call.args[0] = target;
    if (n)
        memcpy(c->call.args + (target ? 1 : 0), args, n * sizeof(*args));
    if (!ck__cel_node_done(p, c))
        return NULL;
    return ck__cel_expand_macro(p, c);
}

static struct ck__cel_node *literal(struct ck__cel_parser *p, bool negate)
{
    struct ck__cel_token *t = &p->tok;
    struct ck__cel_node *n = NULL;
    switch (t->kind) {
    case T_INT:
        if (t->int_overflow && !(negate && t->u == (uint64_t)INT64_MAX + 1))
            return ck__cel_parse_error(p, t->pos, "Syntax error: invalid int literal");
        n = ck__cel_node_new(p, N_INT, t->pos);
        if (n)
            n->i = negate ? (int64_t)(0 - t->u) : (int64_t)t->u;
        break;
    case T_UINT:
        n = ck__cel_node_new(p, N_UINT, t->pos);
        if (n)
            n->u = t->u;
        break;
    case T_DOUBLE:
        n = ck__cel_node_new(p, N_DOUBLE, t->pos);
        if (n)
            n->d = negate ? -t->d : t->d;
        break;
    case T_STRING:
    case T_BYTES:
        n = ck__cel_node_new(p, t->kind == T_STRING ? N_STRING : N_BYTES, t->pos);
        if (n) {
            n->str.p = t->s;
            n->str.len = t->slen;
        }
        break;
    case T_TRUE:
    case T_FALSE:
        n = ck__cel_node_new(p, N_BOOL, t->pos);
        if (n)
            n->b = t->kind == T_TRUE;
        break;
    case T_NULL:
        n = ck__cel_node_new(p, N_NULL, t->pos);
        break;
    default:
        return unexpected(p, NULL);
    }
    if (n)
        next(p);
    return n;
}

static char *ident_text(struct ck__cel_parser *p)
{
    char *s = ck__cel_strndup(p->arena, p->lx.src + p->tok.pos, p->tok.len);
    if (!s)
        ck__cel_parse_error(p, p->tok.pos, "out of memory");
    return s;
}

static struct ck__cel_node *primary(struct ck__cel_parser *p)
{
    size_t pos = p->tok.pos;
    switch (p->tok.kind) {
    case T_DOT:
        next(p);
        if (p->tok.kind != T_IDENT)
            return unexpected(p, "IDENTIFIER");
        return primary(p);
    case T_IDENT: {
        if (p->tok.reserved)
            return ck__cel_parse_error(p, pos, "Syntax error: reserved identifier: %.*s",
                                       (int)p->tok.len, p->lx.src + p->tok.pos);
        char *name = ident_text(p);
        if (!name)
            return NULL;
        next(p);
        if (p->tok.kind == T_LPAREN)
            return finish_call(p, NULL, name);
        if (p->tok.kind == T_LBRACE)
            return ck__cel_parse_error(p, p->tok.pos,
                                       "message construction is not supported: no message types");
        struct ck__cel_node *n = ck__cel_node_new(p, N_IDENT, pos);
        if (n)
            n->name = name;
        return n;
    }
    case T_LPAREN: {
        next(p);
        struct ck__cel_node *e = expr(p);
        if (!e || !expect(p, T_RPAREN, "')'"))
            return NULL;
        return e;
    }
    case T_LBRACKET: {
        next(p);
        struct ck__cel_node *n = ck__cel_node_new(p, N_LIST, pos);
        if (!n || !expr_list(p, T_RBRACKET, true, &n->list.items, &n->list.n, "']'"))
            return NULL;
        return ck__cel_node_done(p, n) ? n : NULL;
    }
    case T_LBRACE: {
        next(p);
        struct ck__cel_node *n = ck__cel_node_new(p, N_MAP, pos);
        if (!n)
            return NULL;
        size_t cap = 0;
        while (p->tok.kind != T_RBRACE) {
            /* an optional entry, ?k: v: kept when v has a value */
            size_t opt_pos = p->tok.pos;
            bool optional = p->tok.kind == T_QUESTION;
            if (optional)
                next(p);
            struct ck__cel_node *k = expr(p);
            if (!k || !expect(p, T_COLON, "':'"))
                return NULL;
            struct ck__cel_node *v = expr(p);
            if (v && optional)
                v = call_node(p, OP_OPT_MARK, opt_pos, 1, v, NULL, NULL);
            if (!v)
                return NULL;
            if (n->map.n == cap) {
                size_t ncap = cap ? cap * 2 : 4;
                struct ck__cel_node **nk = ck__cel_alloc(p->arena, ncap * sizeof(*nk));
                struct ck__cel_node **nv = ck__cel_alloc(p->arena, ncap * sizeof(*nv));
                if (!nk || !nv)
                    return ck__cel_parse_error(p, pos, "out of memory");
                if (n->map.n) {
                    memcpy(nk, n->map.keys, n->map.n * sizeof(*nk));
                    memcpy(nv, n->map.vals, n->map.n * sizeof(*nv));
                }
                n->map.keys = nk;
                n->map.vals = nv;
                cap = ncap;
            }
            n->map.keys[n->map.n] = k;
            n->map.vals[n->map.n++] = v;
            if (p->tok.kind == T_COMMA) {
                next(p);
                continue;
            }
            if (p->tok.kind != T_RBRACE)
                return unexpected(p, "'}'");
        }
        next(p);
        return ck__cel_node_done(p, n) ? n : NULL;
    }
    default:
        return literal(p, false);
    }
}

static struct ck__cel_node *member(struct ck__cel_parser *p, struct ck__cel_node *n)
{
    while (n) {
        size_t pos = p->tok.pos;
        if (p->tok.kind == T_DOT) {
            next(p);
            bool optional = p->tok.kind == T_QUESTION;
            if (optional)
                next(p);
            if (p->tok.kind != T_IDENT)
                return unexpected(p, "IDENTIFIER");
            char *name = ident_text(p);
            if (!name)
                return NULL;
            next(p);
            if (p->tok.kind == T_LPAREN && !optional) {
                n = finish_call(p, n, name);
                continue;
            }
            if (p->tok.kind == T_LBRACE)
                return ck__cel_parse_error(
                    p, p->tok.pos, "message construction is not supported: no message types");
            struct ck__cel_node *s = ck__cel_node_new(p, N_SELECT, pos);
            if (!s)
                return NULL;
            s->sel.operand = n;
            s->sel.field = name;
            s->sel.optional = optional;
            n = ck__cel_node_done(p, s) ? s : NULL;
        } else if (p->tok.kind == T_LBRACKET) {
            next(p);
            bool optional = p->tok.kind == T_QUESTION;
            if (optional)
                next(p);
            struct ck__cel_node *i = expr(p);
            if (!i || !expect(p, T_RBRACKET, "']'"))
                return NULL;
            n = call_node(p, optional ? OP_OPT_INDEX : OP_INDEX, pos, 2, n, i, NULL);
        } else {
            break;
        }
    }
    return n;
}

static struct ck__cel_node *unary(struct ck__cel_parser *p)
{
    size_t pos = p->tok.pos;
    enum ck__cel_tok op = p->tok.kind;
    if (op != T_NOT && op != T_MINUS)
        return member(p, primary(p));
    unsigned count = 0;
    while (p->tok.kind == op) {
        count++;
        next(p);
    }
    struct ck__cel_node *n;
    if (op == T_MINUS && (p->tok.kind == T_INT || p->tok.kind == T_DOUBLE)) {
        n = member(p, literal(p, true));
        count--;
    } else {
        n = member(p, primary(p));
    }
    if (!n || count % 2 == 0)
        return n;
    return call_node(p, op == T_NOT ? OP_NOT : OP_NEG, pos, 1, n, NULL, NULL);
}

static struct ck__cel_node *binary(struct ck__cel_parser *p, int level);

/* The binary levels, loosest first, each a left-associative loop. */
static const struct {
    enum ck__cel_tok tok;
    enum ck__cel_op op;
    int level;
} binops[] = {
    {T_OR, OP_OR, 0},     {T_AND, OP_AND, 1},     {T_LT, OP_LT, 2},     {T_LE, OP_LE, 2},
    {T_GT, OP_GT, 2},     {T_GE, OP_GE, 2},       {T_EQ, OP_EQ, 2},     {T_NE, OP_NE, 2},
    {T_IN, OP_IN, 2},     {T_PLUS, OP_ADD, 3},    {T_MINUS, OP_SUB, 3}, {T_STAR, OP_MUL, 4},
    {T_SLASH, OP_DIV, 4}, {T_PERCENT, OP_MOD, 4},
};

static struct ck__cel_node *operand(struct ck__cel_parser *p, int level)
{
    return level == 4 ? unary(p) : binary(p, level + 1);
}

static struct ck__cel_node *binary(struct ck__cel_parser *p, int level)
{
    struct ck__cel_node *lhs = operand(p, level);
    while (lhs) {
        size_t k;
        for (k = 0; k < sizeof(binops) / sizeof(binops[0]); k++)
            if (binops[k].level == level && binops[k].tok == p->tok.kind)
                break;
        if (k == sizeof(binops) / sizeof(binops[0]))
            break;
        size_t pos = p->tok.pos;
        next(p);
        struct ck__cel_node *rhs = operand(p, level);
        if (!rhs)
            return NULL;
        lhs = call_node(p, binops[k].op, pos, 2, lhs, rhs, NULL);
    }
    return lhs;
}

static struct ck__cel_node *expr(struct ck__cel_parser *p)
{
    if (++p->depth > CK_CEL_MAX_DEPTH)
        return ck__cel_parse_error(p, p->tok.pos, "expression recursion limit exceeded: %d",
                                   CK_CEL_MAX_DEPTH);
    struct ck__cel_node *cond = binary(p, 0);
    if (cond && p->tok.kind == T_QUESTION) {
        size_t pos = p->tok.pos;
        next(p);
        struct ck__cel_node *a = binary(p, 0);
        if (!a || !expect(p, T_COLON, "':'"))
            return NULL;
        struct ck__cel_node *b = expr(p);
        if (!b)
            return NULL;
        cond = call_node(p, OP_COND, pos, 3, cond, a, b);
    }
    p->depth--;
    return cond;
}

struct ck__cel_node *ck__cel_parse(struct ck__cel_parser *p)
{
    p->lx.arena = p->arena;
    next(p);
    struct ck__cel_node *n = expr(p);
    if (n && p->tok.kind != T_EOF)
        return unexpected(p, "<EOF>");
    return n;
}

void ck__cel_report(struct ck__buf *b, const char *src, size_t len, size_t pos, const char *msg)
{
    size_t line = 1, bol = 0;
    for (size_t i = 0; i < pos && i < len; i++)
        if (src[i] == '\n') {
            line++;
            bol = i + 1;
        }
    size_t col = ck__cel_utf8_len(src + bol, pos - bol);
    size_t eol = bol;
    while (eol < len && src[eol] != '\n')
        eol++;
    ck__buf_printf(b, "ERROR: <input>:%zu:%zu: %s\n | ", line, col + 1, msg);
    ck__buf_add(b, src + bol, eol - bol > 1000 ? 1000 : eol - bol);
    ck__buf_adds(b, "\n | ");
    for (size_t i = 0; i < col && i < 1000; i++)
        ck__buf_adds(b, ".");
    ck__buf_adds(b, "^");
}

/* reterr: the error as cel-go prints it, its line and a caret under the column. */
static int report(struct ck_err *reterr, const char *src, size_t len, size_t pos, const char *msg)
{
    struct ck__buf b = {.max = 4096};
    ck__cel_report(&b, src, len, pos, msg);
    int r = ck_err_set_long(reterr, CK_EINVAL, b.p ? b.p : msg);
    ck__buf_release(&b);
    return r;
}

int ck_cel_compile(const char *src, size_t len, struct ck_cel_program **ret_prog,
                   struct ck_err *reterr)
{
    /* a code point is at most 4 bytes: anything longer is over the limit */
    size_t points = len > 4 * (size_t)CK_CEL_MAX_EXPR_LEN ? len : 0;
    if (!points && !ck__cel_utf8_valid(src, len))
        return ck_err_set(reterr, CK_EINVAL, "ERROR: <input>:1:1: invalid UTF-8 in the expression");
    if (!points)
        points = ck__cel_utf8_len(src, len);
    if (points > CK_CEL_MAX_EXPR_LEN)
        return ck_err_set(reterr, CK_EINVAL,
                          "ERROR: <input>:-1:0: expression code point size exceeds limit: size: "
                          "%zu, limit %d",
                          points, CK_CEL_MAX_EXPR_LEN);
    struct ck_cel_program *prog = ck__calloc(1, sizeof(*prog));
    if (!prog)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck__cel_parser p = {.arena = &prog->arena, .prog = prog};
    p.lx.src = src;
    p.lx.len = len;
    struct ck__cel_node *root = ck__cel_parse(&p);
    if (root && !ck__cel_resolve(&p, root))
        root = NULL;
    if (!root) {
        int r = strcmp(p.err, "out of memory") ? report(reterr, src, len, p.err_pos, p.err)
                                               : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        ck_cel_program_free(prog);
        return r;
    }
    prog->root = root;
    prog->source = ck__cel_strndup(&prog->arena, src, len);
    if (!prog->source) {
        ck_cel_program_free(prog);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    *ret_prog = prog;
    return 0;
}

/* Whether n reads the variable name; hidden: a comprehension variable of that name is in scope. */
static bool references(const struct ck__cel_node *n, const char *name)
{
    switch (n->kind) {
    case N_IDENT:
        return strcmp(n->name, name) == 0;
    case N_SELECT:
        return references(n->sel.operand, name);
    case N_CALL:
        for (size_t i = 0; i < n->call.nargs; i++)
            if (references(n->call.args[i], name))
                return true;
        return false;
    case N_LIST:
        for (size_t i = 0; i < n->list.n; i++)
            if (references(n->list.items[i], name))
                return true;
        return false;
    case N_MAP:
        for (size_t i = 0; i < n->map.n; i++)
            if (references(n->map.keys[i], name) || references(n->map.vals[i], name))
                return true;
        return false;
    case N_COMPREHENSION:
        if (references(n->comp.range, name))
            return true;
        if (n->comp.var && strcmp(n->comp.var, name) == 0)
            return false;
        return (n->comp.pred && references(n->comp.pred, name)) ||
               (n->comp.fn && references(n->comp.fn, name));
    default:
        return false;
    }
}

bool ck_cel_program_references(const struct ck_cel_program *prog, const char *name)
{
    return prog && references(prog->root, name);
}

struct ck_cel_program *ck_cel_program_free(struct ck_cel_program *prog)
{
    if (!prog)
        return NULL;
    for (size_t i = 0; i < prog->ncaches; i++)
        ck__regex_free(prog->caches[i]);
    free(prog->caches);
    ck__cel_arena_release(&prog->arena);
    free(prog);
    return NULL;
}
