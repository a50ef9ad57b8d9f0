/*
 * loom: the rules-file parser (format in loom_rules.h and docs/user/tuning.md).
 *
 * Strict on purpose: the first error stops the parse with its line, column and
 * reason, and the component then keeps the built-in rules, so a typo never turns
 * into a silently different selection.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opal/loom/loom_rules.h"

#define MAX_TOKENS 32

typedef struct {
    const char *s; /* start in the line */
    int len;
    int col;       /* 1-based */
} token_t;

typedef struct {
    int line;
    mca_coll_loom_rules_error_t *err;
} ctx_t;

static int fail(ctx_t *c, int col, const char *fmt, ...)
{
    va_list ap;
    c->err->line = c->line;
    c->err->column = col;
    va_start(ap, fmt);
    vsnprintf(c->err->reason, sizeof(c->err->reason), fmt, ap);
    va_end(ap);
    return -1;
}

static bool tok_is(const token_t *t, const char *word)
{
    return (int) strlen(word) == t->len && 0 == strncmp(t->s, word, (size_t) t->len);
}

enum { NUM_OK = 0, NUM_SYNTAX, NUM_OVERFLOW };

/* Parses a decimal number with an optional K/M/G suffix (when allowed; either case)
 * from [s, s+len). */
static int parse_number(const char *s, int len, bool suffix, size_t *out)
{
    size_t v = 0, mult = 1;

    if (len <= 0) {
        return NUM_SYNTAX;
    }
    if (suffix) {
        switch (s[len - 1]) {
        case 'K': case 'k': mult = (size_t) 1 << 10; len--; break;
        case 'M': case 'm': mult = (size_t) 1 << 20; len--; break;
        case 'G': case 'g': mult = (size_t) 1 << 30; len--; break;
        default: break;
        }
    }
    if (len <= 0) {
        return NUM_SYNTAX;
    }
    for (int i = 0; i < len; ++i) {
        if (s[i] < '0' || s[i] > '9') {
            return NUM_SYNTAX;
        }
    }
    for (int i = 0; i < len; ++i) {
        size_t d = (size_t) (s[i] - '0');
        if (v > (SIZE_MAX - d) / 10) {
            return NUM_OVERFLOW;
        }
        v = 10 * v + d;
    }
    if (v > SIZE_MAX / mult) {
        return NUM_OVERFLOW;
    }
    *out = v * mult;
    return NUM_OK;
}

static int number_error(ctx_t *c, int col, const char *key, const char *s, int len, bool bytes, int why)
{
    if (NUM_OVERFLOW == why) {
        return fail(c, col, "%s: '%.*s' is too large", key, len, s);
    }
    return fail(c, col, "%s: '%.*s' is not a %s", key, len, s,
                bytes ? "byte count (digits, optional K/M/G)" : "positive number");
}

/* N, A-B, A- or -B.  *lo / *hi keep their defaults for an open end; an explicit bound
 * below `least` is refused before the order of the bounds is looked at. */
static int parse_range(ctx_t *c, const token_t *t, const char *key, const char *val, int vlen, bool bytes,
                       size_t least, size_t *lo, size_t *hi)
{
    const char *dash = memchr(val, '-', (size_t) vlen);
    int col = t->col + (int) (val - t->s), rc;

    if (NULL == dash) {
        if (NUM_OK != (rc = parse_number(val, vlen, bytes, lo))) {
            return number_error(c, col, key, val, vlen, bytes, rc);
        }
        if (*lo < least) {
            return fail(c, col, "%s: '%.*s' must be at least %zu", key, vlen, val, least);
        }
        *hi = *lo;
    } else {
        int left = (int) (dash - val), right = vlen - left - 1;
        if (0 == left && 0 == right) {
            return fail(c, col, "%s: '-' needs a bound on at least one side", key);
        }
        if (left > 0) {
            if (NUM_OK != (rc = parse_number(val, left, bytes, lo))) {
                return number_error(c, col, key, val, left, bytes, rc);
            }
            if (*lo < least) {
                return fail(c, col, "%s: '%.*s' must be at least %zu", key, left, val, least);
            }
        }
        if (right > 0) {
            if (NUM_OK != (rc = parse_number(dash + 1, right, bytes, hi))) {
                return number_error(c, col + left + 1, key, dash + 1, right, bytes, rc);
            }
            if (*hi < least) {
                return fail(c, col + left + 1, "%s: '%.*s' must be at least %zu", key, right, dash + 1, least);
            }
        }
    }
    if (*lo > *hi) {
        return fail(c, col, "%s: empty range %.*s (the lower bound is above the upper)", key, vlen, val);
    }
    return 0;
}

/* Ranges of P, nodes, ranks per node: positive ints, max 0 meaning unbounded. */
static int parse_count_range(ctx_t *c, const token_t *t, const char *key, const char *val, int vlen,
                             int *min, int *max)
{
    size_t lo = 1, hi = (size_t) INT32_MAX;
    if (0 != parse_range(c, t, key, val, vlen, false, 1, &lo, &hi)) {
        return -1;
    }
    if (hi > (size_t) INT32_MAX) {
        return fail(c, t->col + (int) (val - t->s), "%s: '%.*s' must lie in 1..%d", key, vlen, val,
                    INT32_MAX);
    }
    *min = (int) lo;
    *max = hi == (size_t) INT32_MAX ? 0 : (int) hi;
    return 0;
}

static int parse_ops(ctx_t *c, const token_t *t, const char *val, int vlen, mca_coll_loom_rule_t *r)
{
    static const struct {
        const char *name;
        unsigned bit;
        bool set;
    } props[] = {
        {"commutative", MCA_COLL_LOOM_CALL_COMMUTATIVE, true},
        {"noncommutative", MCA_COLL_LOOM_CALL_COMMUTATIVE, false},
        {"exact", MCA_COLL_LOOM_CALL_EXACT, true},
        {"inexact", MCA_COLL_LOOM_CALL_EXACT, false},
        {"idempotent", MCA_COLL_LOOM_CALL_IDEMPOTENT, true},
        {"nonidempotent", MCA_COLL_LOOM_CALL_IDEMPOTENT, false},
    };
    const char *p = val, *end = val + vlen;

    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t) (end - p));
        int len = (int) ((comma ? comma : end) - p);
        int col = t->col + (int) (p - t->s);
        size_t i;
        for (i = 0; i < sizeof(props) / sizeof(props[0]); ++i) {
            if ((int) strlen(props[i].name) == len && 0 == strncmp(p, props[i].name, (size_t) len)) {
                break;
            }
        }
        if (i == sizeof(props) / sizeof(props[0])) {
            return fail(c, col,
                        "op: unknown property '%.*s' (known: commutative, noncommutative, exact, "
                        "inexact, idempotent, nonidempotent)",
                        len, p);
        }
        if ((r->call_mask & props[i].bit) && (0 != (r->call_value & props[i].bit)) != props[i].set) {
            return fail(c, col, "op: '%s' contradicts a property given before it", props[i].name);
        }
        r->call_mask |= props[i].bit;
        if (props[i].set) {
            r->call_value |= props[i].bit;
        }
        if (NULL == comma) {
            break;
        }
        p = comma + 1;
    }
    return 0;
}

static int parse_shm(ctx_t *c, const token_t *t, const char *val, int vlen, mca_coll_loom_rule_t *r)
{
    bool yes = 3 == vlen && 0 == strncmp(val, "yes", 3);
    if (!yes && !(2 == vlen && 0 == strncmp(val, "no", 2))) {
        return fail(c, t->col + (int) (val - t->s), "shm: '%.*s' is neither 'yes' nor 'no'", vlen, val);
    }
    r->call_mask |= MCA_COLL_LOOM_CALL_SHM;
    if (yes) {
        r->call_value |= MCA_COLL_LOOM_CALL_SHM;
    }
    return 0;
}

/* torus=sub: the communicator is a whole torus or sub-torus (mca_coll_loom_swing_sub_torus) */
static int parse_torus(ctx_t *c, const token_t *t, const char *val, int vlen, mca_coll_loom_rule_t *r)
{
    if (!(3 == vlen && 0 == strncmp(val, "sub", 3))) {
        return fail(c, t->col + (int) (val - t->s), "torus: '%.*s' is not 'sub'", vlen, val);
    }
    r->sub_torus = true;
    return 0;
}

/* Appends to buf (len bytes, `used` of them taken), never past its end; returns the new used. */
static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...)
{
    va_list ap;
    if (used >= len) {
        return used;
    }
    va_start(ap, fmt);
    used += (size_t) vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    return used;
}

/* The conditions a rule may give before its '->'. */
enum { K_P, K_NODES, K_RPN, K_OP, K_SHM, K_TORUS, K_BYTES, NKEYS };
static const char *const rule_keys[NKEYS] = {"P", "nodes", "rpn", "op", "shm", "torus", "bytes"};

/* The collective that starts a rule. */
static int parse_coll(ctx_t *c, const token_t *t, mca_coll_loom_rule_t *r)
{
    int coll;

    for (coll = 0; coll < MCA_COLL_LOOM_NUM_COLLS; ++coll) {
        const char *name = mca_coll_loom_coll_name(coll);
        if (tok_is(t, name)) {
            break;
        }
        /* i<coll>: the non-blocking and persistent forms only */
        if (t->len == (int) strlen(name) + 1 && 'i' == t->s[0] && 0 == strncmp(t->s + 1, name, strlen(name))) {
            r->call_mask |= MCA_COLL_LOOM_CALL_NB;
            r->call_value |= MCA_COLL_LOOM_CALL_NB;
            break;
        }
    }
    if (coll == MCA_COLL_LOOM_NUM_COLLS) {
        char known[256] = "";
        size_t used = 0;
        for (int k = 0; k < MCA_COLL_LOOM_NUM_COLLS; ++k) {
            used = append(known, sizeof(known), used, "%s%s", k ? ", " : "",
                          mca_coll_loom_coll_name((mca_coll_loom_coll_t) k));
        }
        return fail(c, t->col, "unknown collective '%.*s' (known: %s, and i<collective> for the "
                    "non-blocking forms)", t->len, t->s, known);
    }
    r->coll = coll;
    return 0;
}

/* One condition `key=value` (key rule_keys[k], value [val, val+vlen)). */
static int parse_condition(ctx_t *c, const token_t *t, int k, const char *val, int vlen, mca_coll_loom_rule_t *r)
{
    switch (k) {
    case K_P: return parse_count_range(c, t, "P", val, vlen, &r->min_P, &r->max_P);
    case K_NODES: return parse_count_range(c, t, "nodes", val, vlen, &r->min_nodes, &r->max_nodes);
    case K_RPN: return parse_count_range(c, t, "rpn", val, vlen, &r->min_rpn, &r->max_rpn);
    case K_OP: return parse_ops(c, t, val, vlen, r);
    case K_SHM: return parse_shm(c, t, val, vlen, r);
    case K_TORUS: return parse_torus(c, t, val, vlen, r);
    default: return parse_range(c, t, "bytes", val, vlen, true, 0, &r->min_bytes, &r->max_bytes);
    }
}

/* The conditions from tok[1] up to the '->', whose index goes to *arrow (-1: none). */
static int parse_conditions(ctx_t *c, const token_t *tok, int ntok, mca_coll_loom_rule_t *r, int *arrow)
{
    bool seen[NKEYS] = {false};

    *arrow = -1;
    for (int i = 1; i < ntok; ++i) {
        const char *eq;
        int k, klen;
        if (tok_is(&tok[i], "->")) {
            *arrow = i;
            break;
        }
        eq = memchr(tok[i].s, '=', (size_t) tok[i].len);
        klen = eq ? (int) (eq - tok[i].s) : tok[i].len;
        for (k = 0; k < NKEYS; ++k) {
            if ((int) strlen(rule_keys[k]) == klen && 0 == strncmp(tok[i].s, rule_keys[k], (size_t) klen)) {
                break;
            }
        }
        if (k == NKEYS || NULL == eq) {
            return fail(c, tok[i].col,
                        "'%.*s' is not a condition (expected P=, nodes=, rpn=, op=, shm=, torus=, bytes= or '->')",
                        tok[i].len, tok[i].s);
        }
        if (seen[k]) {
            return fail(c, tok[i].col, "condition '%s' given twice", rule_keys[k]);
        }
        seen[k] = true;
        const char *val = eq + 1;
        const int vlen = tok[i].len - klen - 1;
        if (0 == vlen) {
            return fail(c, tok[i].col, "condition '%s' has no value", rule_keys[k]);
        }
        if (0 != parse_condition(c, &tok[i], k, val, vlen, r)) {
            return -1;
        }
    }
    return 0;
}

/* A transport rule's target "transport=pml|ucx" (token a), the last token. */
static int parse_transport(ctx_t *c, const token_t *a, int more, mca_coll_loom_rule_t *r)
{
    if (a->len == 13 && 0 == strncmp(a->s + 10, "pml", 3)) {
        r->transport = MCA_COLL_LOOM_RULE_PML;
    } else if (a->len == 13 && 0 == strncmp(a->s + 10, "ucx", 3)) {
        r->transport = MCA_COLL_LOOM_RULE_UCX;
    } else {
        return fail(c, a->col + 10, "transport: '%.*s' is neither 'pml' nor 'ucx'", a->len - 10, a->s + 10);
    }
    if (more) {
        return fail(c, a[1].col, "unexpected '%.*s' after the transport (a transport rule names "
                    "no algorithm)", a[1].len, a[1].s);
    }
    return 0;
}

/* The algorithm after '->' (token a): one serving the rule's collective, or 'previous'. */
static int parse_alg(ctx_t *c, const token_t *a, mca_coll_loom_rule_t *r)
{
    char name[64];
    int alg;

    if (tok_is(a, "previous")) {
        r->alg = NULL;
        return 0;
    }
    snprintf(name, sizeof(name), "%.*s", a->len, a->s);
    alg = mca_coll_loom_alg_find(r->coll, name);
    if (alg < 0) {
        char known[160] = "previous";
        size_t used = strlen(known);
        for (int j = 0; j < mca_coll_loom_num_algs; ++j) {
            if (mca_coll_loom_alg_serves(j, r->coll)) {
                used = append(known, sizeof(known), used, ", %s", mca_coll_loom_algs[j]->name);
            }
        }
        return fail(c, a->col, "%s has no algorithm '%.*s' (known: %s)", mca_coll_loom_coll_name(r->coll), a->len,
                    a->s, known);
    }
    r->alg = mca_coll_loom_algs[alg]->name;
    return 0;
}

/* The algorithm's knob "<knob>=<value>" (token kt), the last token. */
static int parse_knob(ctx_t *c, const token_t *kt, int more, mca_coll_loom_rule_t *r)
{
    const char *eq = memchr(kt->s, '=', (size_t) kt->len);
    int klen = eq ? (int) (eq - kt->s) : kt->len;
    const mca_coll_loom_alg_t *a = NULL;
    size_t v;

    for (int k = 0; k < NKEYS; ++k) {
        if (eq && (int) strlen(rule_keys[k]) == klen && 0 == strncmp(kt->s, rule_keys[k], (size_t) klen)) {
            return fail(c, kt->col, "condition '%s' after '->': conditions go before it", rule_keys[k]);
        }
    }
    if (NULL == r->alg) {
        return fail(c, kt->col, "'previous' takes no knob");
    }
    a = mca_coll_loom_algs[mca_coll_loom_alg_find(r->coll, r->alg)];
    if (NULL == eq || NULL == a->knob || (int) strlen(a->knob) != klen ||
        0 != strncmp(kt->s, a->knob, (size_t) klen)) {
        if (NULL == a->knob) {
            return fail(c, kt->col, "algorithm '%s' has no knob", a->name);
        }
        return fail(c, kt->col, "'%.*s' is not the knob of '%s' (expected %s=<%d..%d>)", kt->len, kt->s,
                    a->name, a->knob, a->knob_min, a->knob_max);
    }
    if (NUM_OK != parse_number(eq + 1, kt->len - klen - 1, false, &v) || v < (size_t) a->knob_min ||
        v > (size_t) a->knob_max) {
        return fail(c, kt->col + klen + 1, "%s must be a number in %d..%d", a->knob, a->knob_min,
                    a->knob_max);
    }
    /* a size knob's 0 is loom's own choice, as in its MCA parameter; the rule then
     * asks for it whatever the parameter is set to */
    r->knob = 0 == v ? MCA_COLL_LOOM_KNOB_AUTO : (int) v;
    if (more) {
        return fail(c, kt[1].col, "unexpected '%.*s' after the knob", kt[1].len, kt[1].s);
    }
    return 0;
}

/* One rule: the collective, its conditions, '->', then an algorithm and its knob or
 * a transport. */
static int parse_line(ctx_t *c, const token_t *tok, int ntok, mca_coll_loom_rule_t *r)
{
    int arrow;

    memset(r, 0, sizeof(*r));
    r->max_bytes = SIZE_MAX;
    r->min_P = r->min_nodes = r->min_rpn = 1;
    r->line = c->line;

    if (0 != parse_coll(c, &tok[0], r) || 0 != parse_conditions(c, tok, ntok, r, &arrow)) {
        return -1;
    }
    if (arrow < 0) {
        const token_t *last = &tok[ntok - 1];
        return fail(c, last->col + last->len, "missing '-> <algorithm>' at the end of the rule");
    }
    if (arrow + 1 >= ntok) {
        return fail(c, tok[arrow].col, "'->' must be followed by an algorithm name, 'previous' or transport=");
    }
    /* a transport rule: "-> transport=pml|ucx", and nothing else */
    if (tok[arrow + 1].len > 10 && 0 == strncmp(tok[arrow + 1].s, "transport=", 10)) {
        return parse_transport(c, &tok[arrow + 1], arrow + 2 < ntok, r);
    }
    if (0 != parse_alg(c, &tok[arrow + 1], r)) {
        return -1;
    }
    if (arrow + 2 < ntok) {
        return parse_knob(c, &tok[arrow + 2], arrow + 3 < ntok, r);
    }
    return 0;
}

int mca_coll_loom_rules_parse(const char *text, mca_coll_loom_ruleset_t *out,
                              mca_coll_loom_rules_error_t *err)
{
    ctx_t c = {.line = 0, .err = err};
    const char *p = text;
    int cap = 0;

    out->rules = NULL;
    out->nrules = 0;
    memset(err, 0, sizeof(*err));

    while (*p) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        const char *hash = memchr(p, '#', (size_t) (end - p));
        const char *q = p, *stop = hash ? hash : end;
        token_t tok[MAX_TOKENS];
        int ntok = 0;

        c.line++;
        while (q < stop) {
            while (q < stop && (' ' == *q || '\t' == *q || '\r' == *q)) {
                q++;
            }
            if (q >= stop) {
                break;
            }
            if (ntok == MAX_TOKENS) {
                mca_coll_loom_rules_free(out);
                return fail(&c, (int) (q - p) + 1, "too many tokens on one line (at most %d)", MAX_TOKENS);
            }
            tok[ntok].s = q;
            tok[ntok].col = (int) (q - p) + 1;
            while (q < stop && ' ' != *q && '\t' != *q && '\r' != *q) {
                q++;
            }
            tok[ntok].len = (int) (q - tok[ntok].s);
            ntok++;
        }
        if (ntok > 0) {
            mca_coll_loom_rule_t r;
            if (0 != parse_line(&c, tok, ntok, &r)) {
                mca_coll_loom_rules_free(out);
                return -1;
            }
            if (out->nrules == cap) {
                int ncap = cap ? 2 * cap : 16;
                mca_coll_loom_rule_t *nr = realloc(out->rules, (size_t) ncap * sizeof(*nr));
                if (NULL == nr) {
                    mca_coll_loom_rules_free(out);
                    return fail(&c, 1, "out of memory");
                }
                out->rules = nr;
                cap = ncap;
            }
            out->rules[out->nrules++] = r;
        }
        p = eol ? eol + 1 : end;
    }
    return 0;
}

int mca_coll_loom_rules_load(const char *path, mca_coll_loom_ruleset_t *out,
                             mca_coll_loom_rules_error_t *err)
{
    FILE *f;
    struct stat st;
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc;

    out->rules = NULL;
    out->nrules = 0;
    memset(err, 0, sizeof(*err));
    /* a regular file only: a FIFO would block MPI_Init, /dev/zero fill the memory */
    if (0 != stat(path, &st)) {
        snprintf(err->reason, sizeof(err->reason), "cannot open: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err->reason, sizeof(err->reason), "not a regular file");
        return -1;
    }
    f = fopen(path, "r");
    if (NULL == f) {
        snprintf(err->reason, sizeof(err->reason), "cannot open: %s", strerror(errno));
        return -1;
    }
    for (;;) {
        size_t n;
        if (len >= MCA_COLL_LOOM_RULES_MAX_BYTES) {
            free(text);
            fclose(f);
            snprintf(err->reason, sizeof(err->reason), "larger than %d bytes: not a rules file",
                     MCA_COLL_LOOM_RULES_MAX_BYTES);
            return -1;
        }
        if (len + 4096 + 1 > cap) {
            char *nt = realloc(text, cap = 2 * cap + 8192);
            if (NULL == nt) {
                free(text);
                fclose(f);
                snprintf(err->reason, sizeof(err->reason), "out of memory");
                return -1;
            }
            text = nt;
        }
        n = fread(text + len, 1, 4096, f);
        len += n;
        if (n < 4096) {
            break;
        }
    }
    if (ferror(f)) {
        snprintf(err->reason, sizeof(err->reason), "read error: %s", strerror(errno));
        free(text);
        fclose(f);
        return -1;
    }
    fclose(f);
    text[len] = '\0';
    if (strlen(text) != len) {
        /* a NUL inside: not a text file */
        int line = 1;
        for (size_t i = 0; i < strlen(text); ++i) {
            line += '\n' == text[i];
        }
        free(text);
        err->line = line;
        err->column = 1;
        snprintf(err->reason, sizeof(err->reason), "NUL byte in the file: not a text file");
        return -1;
    }
    rc = mca_coll_loom_rules_parse(text, out, err);
    free(text);
    return rc;
}

void mca_coll_loom_rules_free(mca_coll_loom_ruleset_t *rs)
{
    free(rs->rules);
    rs->rules = NULL;
    rs->nrules = 0;
}

static size_t append_range(char *buf, size_t len, size_t used, const char *key, size_t lo, size_t hi,
                           size_t lo_default, size_t hi_open)
{
    if (lo == lo_default && hi == hi_open) {
        return used;
    }
    if (lo == hi) {
        return append(buf, len, used, " %s=%zu", key, lo);
    }
    if (hi == hi_open) {
        return append(buf, len, used, " %s=%zu-", key, lo);
    }
    if (lo == lo_default) {
        return append(buf, len, used, " %s=-%zu", key, hi);
    }
    return append(buf, len, used, " %s=%zu-%zu", key, lo, hi);
}

void mca_coll_loom_rule_format(const mca_coll_loom_rule_t *r, char *buf, size_t len)
{
    static const struct {
        unsigned bit;
        const char *yes, *no;
    } props[] = {
        {MCA_COLL_LOOM_CALL_COMMUTATIVE, "commutative", "noncommutative"},
        {MCA_COLL_LOOM_CALL_EXACT, "exact", "inexact"},
        {MCA_COLL_LOOM_CALL_IDEMPOTENT, "idempotent", "nonidempotent"},
    };
    size_t used = 0;
    bool first = true;

    if (0 == len) {
        return;
    }
    buf[0] = '\0';
    used = append(buf, len, used, "%s%s",
                  (r->call_mask & r->call_value & MCA_COLL_LOOM_CALL_NB) ? "i" : "",
                  mca_coll_loom_coll_name(r->coll));
    /* max 0 (unbounded) is written as an open range; min 0 is the same as min 1 */
    used = append_range(buf, len, used, "P", (size_t) (r->min_P > 1 ? r->min_P : 1),
                        r->max_P > 0 ? (size_t) r->max_P : (size_t) INT32_MAX, 1, (size_t) INT32_MAX);
    used = append_range(buf, len, used, "nodes", (size_t) (r->min_nodes > 1 ? r->min_nodes : 1),
                        r->max_nodes > 0 ? (size_t) r->max_nodes : (size_t) INT32_MAX, 1, (size_t) INT32_MAX);
    used = append_range(buf, len, used, "rpn", (size_t) (r->min_rpn > 1 ? r->min_rpn : 1),
                        r->max_rpn > 0 ? (size_t) r->max_rpn : (size_t) INT32_MAX, 1, (size_t) INT32_MAX);
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); ++i) {
        if (r->call_mask & props[i].bit) {
            used = append(buf, len, used, "%s%s", first ? " op=" : ",",
                          (r->call_value & props[i].bit) ? props[i].yes : props[i].no);
            first = false;
        }
    }
    if (r->call_mask & MCA_COLL_LOOM_CALL_SHM) {
        used = append(buf, len, used, " shm=%s", (r->call_value & MCA_COLL_LOOM_CALL_SHM) ? "yes" : "no");
    }
    if (r->sub_torus) {
        used = append(buf, len, used, " torus=sub");
    }
    used = append_range(buf, len, used, "bytes", r->min_bytes, r->max_bytes, 0, SIZE_MAX);
    if (0 != r->transport) {
        (void) append(buf, len, used, " -> transport=%s", MCA_COLL_LOOM_RULE_UCX == r->transport ? "ucx" : "pml");
        return;
    }
    used = append(buf, len, used, " -> %s", NULL == r->alg ? "previous" : r->alg);
    if (NULL != r->alg && (r->knob > 0 || MCA_COLL_LOOM_KNOB_AUTO == r->knob)) {
        int alg = mca_coll_loom_alg_find(r->coll, r->alg);
        if (alg >= 0 && NULL != mca_coll_loom_algs[alg]->knob) {
            append(buf, len, used, " %s=%d", mca_coll_loom_algs[alg]->knob, r->knob > 0 ? r->knob : 0);
        }
    }
}
