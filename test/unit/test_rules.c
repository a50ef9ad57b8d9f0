/*
 * Unit test (no MPI): rules files (opal/loom/loom_rules.h) and their place in the
 * decision (mca_coll_loom_decide with file rules).
 *
 *   1. a good file using every element of the syntax (all condition keys, every
 *      range form, K/M/G suffixes, op lists, comments, blank lines, tabs, previous,
 *      knobs), every field of every parsed rule checked, plus the matching at the
 *      bounds of each range;
 *   2. one bad input per error the parser must report, with the expected line,
 *      column (the offending part: the token, or the value, bound, op property or
 *      knob value inside it) and a word of the reason; the parser
 *      stops at the first error and leaves the rule set empty;
 *   3. format -> parse round trip for every rule of the good file and every
 *      built-in rule;
 *   4. decide: a matching file rule beats the built-in rules, a file rule whose
 *      algorithm refuses the call is skipped, previous gives alg -1, calls outside a
 *      rule's P, nodes, rpn, bytes or op fall through to the built-in rules, a forced
 *      algorithm beats the file;
 *   5. load(): a real file, a missing path and a directory (line 0).
 *
 * Exit status 0 when every check passed, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "opal/loom/loom_decide.h"
#include "opal/loom/loom_registry.h"
#include "opal/loom/loom_rules.h"

#include "unit_check.h"

#define C MCA_COLL_LOOM_CALL_COMMUTATIVE
#define E MCA_COLL_LOOM_CALL_EXACT
#define I MCA_COLL_LOOM_CALL_IDEMPOTENT
#define V MCA_COLL_LOOM_CALL_INVERTIBLE
#define S MCA_COLL_LOOM_CALL_SHM

#define AR MCA_COLL_LOOM_COLL_ALLREDUCE
#define BA MCA_COLL_LOOM_COLL_BARRIER

#define KiB ((size_t) 1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

/* An open upper end of P, nodes or rpn: the header documents max 0 as "no upper
 * bound"; the built-in table spells it INT32_MAX.  Both mean the same. */
#define OPEN (-1)

static bool int_max_is(int got, int want)
{
    if (OPEN == want) {
        return 0 == got || got >= INT32_MAX;
    }
    return got == want;
}

/* A lower end of P, nodes or rpn: these are positive, so 0 and 1 both mean "no
 * lower bound". */
static bool int_min_is(int got, int want)
{
    if (want <= 1) {
        return got == 0 || got == 1;
    }
    return got == want;
}

static const char *str_or_null(const char *s)
{
    return NULL != s ? s : "(previous)";
}

/* ------------------------------------------------------------------------- */
/* 1. a good file                                                            */

/* Every element of the syntax.  The line numbers in `want` below refer to this text. */
static const char good_text[] =
    "# loom rules: a file that uses every element of the syntax\n"            /* 1 */
    "\n"                                                                      /* 2 */
    "   # an indented comment; the blank line above and the one below are ignored\n" /* 3 */
    "    \t  \n"                                                              /* 4 */
    "allreduce P=4 -> pairwise\n"                                             /* 5 */
    "allreduce\tP=2-8\tnodes=2-\trpn=-4\t->\tdissemination\tdissemination_ways=3\n" /* 6 */
    "allreduce bytes=2K-64K op=commutative,exact,idempotent -> bruck bruck_ports=2   # trailing\n" /* 7 */
    "allreduce op=noncommutative,inexact,nonidempotent bytes=-1M -> pairwise\n" /* 8 */
    "  allreduce   bytes=1G-   ->   previous  \n"                             /* 9 */
    "barrier nodes=3 rpn=2 -> pairwise\n"                                     /* 10 */
    "barrier P=100- -> dissemination dissemination_ways=16\n"                 /* 11 */
    "allreduce bytes=0 op=exact -> bruck bruck_ports=1\n"                     /* 12 */
    "allreduce rpn=3-3 nodes=-7 P=1- -> previous#a comment glued to a token\n" /* 13 */
    "barrier shm=yes nodes=1 -> pairwise\n"                                   /* 14 */
    "allreduce op=commutative shm=no bytes=-256 -> ring ring_segment_size=0\n" /* 15 */
    "# the last rule has every key, in another order, and no newline at the end\n" /* 16 */
    "allreduce bytes=3M-4096M shm=yes op=commutative rpn=1- nodes=1-2 P=-64 -> bruck"; /* 17 */

typedef struct {
    int line;
    mca_coll_loom_coll_t coll;
    int min_P, max_P, min_nodes, max_nodes, min_rpn, max_rpn;
    size_t min_bytes, max_bytes;
    unsigned mask, value;
    const char *alg;
    int knob;
} want_t;

static const want_t good_want[] = {
    {5, AR, 4, 4, 1, OPEN, 1, OPEN, 0, SIZE_MAX, 0, 0, "pairwise", 0},
    {6, AR, 2, 8, 2, OPEN, 1, 4, 0, SIZE_MAX, 0, 0, "dissemination", 3},
    {7, AR, 1, OPEN, 1, OPEN, 1, OPEN, 2 * KiB, 64 * KiB, C | E | I, C | E | I, "bruck", 2},
    {8, AR, 1, OPEN, 1, OPEN, 1, OPEN, 0, MiB, C | E | I, 0, "pairwise", 0},
    {9, AR, 1, OPEN, 1, OPEN, 1, OPEN, GiB, SIZE_MAX, 0, 0, NULL, 0},
    {10, BA, 1, OPEN, 3, 3, 2, 2, 0, SIZE_MAX, 0, 0, "pairwise", 0},
    {11, BA, 100, OPEN, 1, OPEN, 1, OPEN, 0, SIZE_MAX, 0, 0, "dissemination", 16},
    {12, AR, 1, OPEN, 1, OPEN, 1, OPEN, 0, 0, E, E, "bruck", 1},
    {13, AR, 1, OPEN, 1, 7, 3, 3, 0, SIZE_MAX, 0, 0, NULL, 0},
    {14, BA, 1, OPEN, 1, 1, 1, OPEN, 0, SIZE_MAX, S, S, "pairwise", 0},
    {15, AR, 1, OPEN, 1, OPEN, 1, OPEN, 0, 256, C | S, C, "ring", MCA_COLL_LOOM_KNOB_AUTO},
    {17, AR, 1, 64, 1, 2, 1, OPEN, 3 * MiB, 4096 * MiB, C | S, C | S, "bruck", 0},
};
#define NGOOD ((int) (sizeof(good_want) / sizeof(good_want[0])))

static void check_rule(const mca_coll_loom_rule_t *r, const want_t *w, const char *what)
{
    CHECK(r->line == w->line, "%s: line %d, expected %d", what, r->line, w->line);
    CHECK(r->coll == w->coll, "%s (line %d): collective %d, expected %d", what, w->line, (int) r->coll,
          (int) w->coll);
    CHECK(int_min_is(r->min_P, w->min_P) && int_max_is(r->max_P, w->max_P),
          "%s (line %d): P %d-%d, expected %d-%d (-1: no bound)", what, w->line, r->min_P, r->max_P,
          w->min_P, w->max_P);
    CHECK(int_min_is(r->min_nodes, w->min_nodes) && int_max_is(r->max_nodes, w->max_nodes),
          "%s (line %d): nodes %d-%d, expected %d-%d (-1: no bound)", what, w->line, r->min_nodes,
          r->max_nodes, w->min_nodes, w->max_nodes);
    CHECK(int_min_is(r->min_rpn, w->min_rpn) && int_max_is(r->max_rpn, w->max_rpn),
          "%s (line %d): rpn %d-%d, expected %d-%d (-1: no bound)", what, w->line, r->min_rpn,
          r->max_rpn, w->min_rpn, w->max_rpn);
    CHECK(r->min_bytes == w->min_bytes && r->max_bytes == w->max_bytes,
          "%s (line %d): bytes %zu-%zu, expected %zu-%zu", what, w->line, r->min_bytes, r->max_bytes,
          w->min_bytes, w->max_bytes);
    CHECK(r->call_mask == w->mask && r->call_value == w->value,
          "%s (line %d): call mask/value %#x/%#x, expected %#x/%#x", what, w->line, r->call_mask,
          r->call_value, w->mask, w->value);
    CHECK((NULL == r->alg && NULL == w->alg)
              || (NULL != r->alg && NULL != w->alg && 0 == strcmp(r->alg, w->alg)),
          "%s (line %d): algorithm %s, expected %s", what, w->line, str_or_null(r->alg),
          str_or_null(w->alg));
    CHECK(r->knob == w->knob, "%s (line %d): knob %d, expected %d", what, w->line, r->knob, w->knob);
}

static mca_coll_loom_params_t shape(int P, int nodes, int rpn, unsigned call)
{
    mca_coll_loom_params_t p;
    memset(&p, 0, sizeof(p));
    p.P = P;
    p.nodes = nodes;
    p.rpn = rpn;
    p.call = call;
    return p;
}

static bool matches(const mca_coll_loom_rule_t *r, mca_coll_loom_coll_t coll, size_t bytes, int P,
                    int nodes, int rpn, unsigned call)
{
    mca_coll_loom_params_t p = shape(P, nodes, rpn, call);
    return mca_coll_loom_rule_matches(r, coll, bytes, &p);
}

static void test_good_file(void)
{
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_rules_error_t err;
    const mca_coll_loom_rule_t *r;
    int rc;

    memset(&err, 0, sizeof(err));
    rc = mca_coll_loom_rules_parse(good_text, &rs, &err);
    CHECK(0 == rc, "good file rejected: line %d column %d: %s", err.line, err.column, err.reason);
    if (0 != rc) {
        return;
    }
    CHECK(NGOOD == rs.nrules, "good file: %d rules, expected %d", rs.nrules, NGOOD);
    for (int i = 0; i < rs.nrules && i < NGOOD; ++i) {
        check_rule(&rs.rules[i], &good_want[i], "good file");
    }
    if (NGOOD != rs.nrules) {
        mca_coll_loom_rules_free(&rs);
        return;
    }

    /* the ranges at their bounds, through mca_coll_loom_rule_matches */
    r = &rs.rules[0]; /* allreduce P=4 -> pairwise */
    CHECK(matches(r, AR, 100, 4, 1, 4, 0), "P=4 does not match P=4");
    CHECK(!matches(r, AR, 100, 3, 1, 3, 0), "P=4 matches P=3");
    CHECK(!matches(r, AR, 100, 5, 1, 5, 0), "P=4 matches P=5");
    CHECK(!matches(r, BA, 0, 4, 1, 4, 0), "an allreduce rule matches a barrier");
    CHECK(matches(r, AR, 0, 4, 1, 4, C | E | I | V) && matches(r, AR, SIZE_MAX, 4, 1, 4, 0),
          "a rule without bytes= or op= does not match every size and op");

    r = &rs.rules[1]; /* P=2-8 nodes=2- rpn=-4 */
    CHECK(matches(r, AR, 8, 2, 2, 1, 0) && matches(r, AR, 8, 8, 2, 4, 0), "P=2-8 misses a bound");
    CHECK(!matches(r, AR, 8, 1, 2, 1, 0) && !matches(r, AR, 8, 9, 2, 4, 0), "P=2-8 matches outside");
    CHECK(matches(r, AR, 8, 8, 1000000, 4, 0), "nodes=2- does not match 1000000 nodes");
    CHECK(!matches(r, AR, 8, 8, 1, 4, 0), "nodes=2- matches 1 node");
    CHECK(matches(r, AR, 8, 8, 2, 1, 0), "rpn=-4 does not match rpn 1");
    CHECK(!matches(r, AR, 8, 8, 2, 5, 0), "rpn=-4 matches rpn 5");

    r = &rs.rules[2]; /* bytes=2K-64K op=commutative,exact,idempotent */
    CHECK(matches(r, AR, 2048, 4, 1, 4, C | E | I) && matches(r, AR, 65536, 4, 1, 4, C | E | I | V),
          "bytes=2K-64K misses a bound");
    CHECK(!matches(r, AR, 2047, 4, 1, 4, C | E | I) && !matches(r, AR, 65537, 4, 1, 4, C | E | I),
          "bytes=2K-64K matches outside");
    CHECK(!matches(r, AR, 4096, 4, 1, 4, C | E) && !matches(r, AR, 4096, 4, 1, 4, C | I)
              && !matches(r, AR, 4096, 4, 1, 4, E | I),
          "op=commutative,exact,idempotent matches a call lacking one of them");

    r = &rs.rules[3]; /* op=noncommutative,inexact,nonidempotent bytes=-1M */
    CHECK(matches(r, AR, 0, 4, 1, 4, 0) && matches(r, AR, MiB, 4, 1, 4, V), "-1M or op= misses");
    CHECK(!matches(r, AR, MiB + 1, 4, 1, 4, 0), "bytes=-1M matches 1M+1");
    CHECK(!matches(r, AR, 8, 4, 1, 4, C) && !matches(r, AR, 8, 4, 1, 4, E)
              && !matches(r, AR, 8, 4, 1, 4, I),
          "op=noncommutative,inexact,nonidempotent matches a call with one of the properties");

    r = &rs.rules[4]; /* bytes=1G- */
    CHECK(matches(r, AR, GiB, 4, 1, 4, 0) && matches(r, AR, SIZE_MAX, 4, 1, 4, 0), "1G- misses");
    CHECK(!matches(r, AR, GiB - 1, 4, 1, 4, 0), "bytes=1G- matches 1G-1");

    r = &rs.rules[5]; /* barrier nodes=3 rpn=2 */
    CHECK(matches(r, BA, 0, 6, 3, 2, C | E | I), "barrier nodes=3 rpn=2 misses");
    CHECK(!matches(r, BA, 0, 6, 2, 3, C | E | I) && !matches(r, BA, 0, 8, 4, 2, C | E | I),
          "nodes=3 rpn=2 matches another shape");

    r = &rs.rules[7]; /* bytes=0 op=exact */
    CHECK(matches(r, AR, 0, 4, 1, 4, E) && !matches(r, AR, 1, 4, 1, 4, E), "bytes=0 is not exact");
    CHECK(!matches(r, AR, 0, 4, 1, 4, C), "op=exact matches an inexact call");
    CHECK(matches(r, AR, 0, 4, 1, 4, C | E | I | V), "op=exact does not match an exact call with more");

    /* unknown shape: nodes 0 is treated as 1 and rpn 0 as P (loom_registry.h) */
    r = &rs.rules[8]; /* line 13: rpn=3-3 nodes=-7 */
    CHECK(matches(r, AR, 8, 3, 0, 0, 0), "nodes=0 rpn=0 (unknown) at P=3 not treated as 1 node of 3");
    CHECK(!matches(r, AR, 8, 4, 0, 0, 0), "rpn=0 (unknown) at P=4 not treated as rpn 4");
    r = &rs.rules[1]; /* nodes=2- */
    CHECK(!matches(r, AR, 8, 4, 0, 0, 0), "nodes=0 (unknown) matches nodes=2-");

    r = &rs.rules[9]; /* line 14: barrier shm=yes */
    CHECK(matches(r, BA, 0, 4, 1, 4, C | E | I | S), "shm=yes does not match a call with the segment");
    CHECK(!matches(r, BA, 0, 4, 1, 4, C | E | I), "shm=yes matches a call without the segment");
    r = &rs.rules[10]; /* line 15: op=commutative shm=no */
    CHECK(matches(r, AR, 8, 4, 1, 4, C | E), "shm=no does not match a call without the segment");
    CHECK(!matches(r, AR, 8, 4, 1, 4, C | E | S), "shm=no matches a call with the segment");

    mca_coll_loom_rules_free(&rs);

    /* files without rules */
    {
        static const char *const empty[] = {"", "\n", "# only a comment", "# a\n\n   \t\n# b\n", "\t\n  \n"};
        for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); ++i) {
            mca_coll_loom_ruleset_t e = {NULL, 0};
            rc = mca_coll_loom_rules_parse(empty[i], &e, &err);
            CHECK(0 == rc && 0 == e.nrules, "file without rules #%zu: rc %d, %d rules (%s)", i, rc,
                  e.nrules, 0 == rc ? "" : err.reason);
            mca_coll_loom_rules_free(&e);
        }
    }
}

/* ------------------------------------------------------------------------- */
/* 2. errors                                                                 */

typedef struct {
    const char *what;
    const char *text;
    int line, column;   /* column 0: any column >= 1 is accepted (see `colalt`) */
    int colalt;         /* a second acceptable column, 0 = none */
    const char *reason; /* alternatives separated by '|', matched case-insensitively */
} bad_t;

/* Lines 1-2 of every multi-line case are valid, so the reported line is checked. */
#define OK2 "# two valid lines first\nallreduce bytes=-8 -> pairwise\n"

static const bad_t bad[] = {
    /* the collective */
    {"unknown collective", OK2 "  scatter -> pairwise\n", 3, 3, 0, "collective|scatter"},
    {"unknown collective (first line)", "gather P=2 -> pairwise\n", 1, 1, 0, "collective|gather"},
    {"condition before the collective", "P=4 allreduce -> pairwise\n", 1, 1, 0, "collective|P=4"},
    /* condition keys */
    {"unknown condition key", OK2 "allreduce size=4 -> pairwise\n", 3, 11, 0, "size|condition|key"},
    {"the same condition twice (P)", "allreduce P=4 bytes=8 P=5 -> pairwise\n", 1, 23, 0,
     "twice|duplicate|again|repeated|more than once|already"},
    {"the same condition twice (bytes)", OK2 "allreduce bytes=1-2\tbytes=3 -> pairwise\n", 3, 21, 0,
     "twice|duplicate|again|repeated|more than once|already"},
    {"the same condition twice (op)", "allreduce op=exact op=commutative -> bruck\n", 1, 20, 0,
     "twice|duplicate|again|repeated|more than once|already"},
    /* ranges and numbers */
    {"range: not a number", "allreduce P=abc -> pairwise\n", 1, 13, 0, "abc|range|number"},
    {"range: empty", "allreduce P= -> pairwise\n", 1, 11, 0, "range|number|empty|missing|no value"},
    {"range: only a dash", "allreduce nodes=- -> pairwise\n", 1, 17, 0, "range|number|empty|missing|bound"},
    {"range: A > B", OK2 "allreduce bytes=64-2 -> pairwise\n", 3, 17, 0, "range|greater|larger|>|empty"},
    {"range: A > B with suffixes", "allreduce bytes=2M-1M -> pairwise\n", 1, 17, 0,
     "range|greater|larger|>|empty"},
    {"range: three parts", "allreduce P=2-4-8 -> pairwise\n", 1, 15, 0, "range|number"},
    {"range: trailing junk", "allreduce rpn=4x -> pairwise\n", 1, 15, 0, "range|number|4x"},
    {"range: negative upper end", "allreduce P=2--3 -> pairwise\n", 1, 15, 0, "range|number|negative"},
    {"range: negative", "allreduce bytes=--1 -> pairwise\n", 1, 18, 0, "range|number|negative|byte count|-1"},
    {"range: zero P", "allreduce P=0 -> pairwise\n", 1, 13, 0, "zero|positive|range|number|0"},
    {"range: zero nodes", "allreduce nodes=0-4 -> pairwise\n", 1, 17, 0, "zero|positive|range|number|0"},
    {"range: zero rpn", "barrier rpn=-0 -> pairwise\n", 1, 14, 0, "zero|positive|range|number|0"},
    {"range: overflow of P", "allreduce P=99999999999 -> pairwise\n", 1, 13, 0,
     "overflow|large|range|number|big|must lie"},
    {"range: overflow of bytes", "allreduce bytes=999999999999999999999999 -> pairwise\n", 1, 17, 0,
     "overflow|large|range|number|big|byte count"},
    {"range: overflow through a suffix", "allreduce bytes=-99999999999999G -> pairwise\n", 1, 18, 0,
     "overflow|large|range|number|big|byte count"},
    {"range: unknown suffix", "allreduce bytes=4T -> pairwise\n", 1, 17, 0, "suffix|range|number|4T"},
    {"range: two suffixes", "allreduce bytes=4KK -> pairwise\n", 1, 17, 0, "suffix|range|number|4KK"},
    {"range: suffix on P", "allreduce P=2K -> pairwise\n", 1, 13, 0, "suffix|range|number|2K"},
    /* op properties */
    {"unknown op property", OK2 "allreduce op=commutative,associative -> bruck\n", 3, 26, 0,
     "associative|property"},
    {"empty op property", "allreduce op=commutative, -> bruck\n", 1, 26, 0, "property|empty|missing"},
    {"empty op list", "allreduce op= -> bruck\n", 1, 11, 0, "property|empty|missing|no value"},
    {"commutative,noncommutative", "allreduce op=commutative,noncommutative -> pairwise\n", 1, 26, 0,
     "contradict|conflict|both|noncommutative"},
    {"exact,inexact", "allreduce op=inexact,commutative,exact -> pairwise\n", 1, 34, 0,
     "contradict|conflict|both|inexact"},
    {"idempotent,nonidempotent", OK2 "allreduce op=nonidempotent,idempotent -> pairwise\n", 3, 28, 0,
     "contradict|conflict|both|nonidempotent"},
    /* shm */
    {"shm: neither yes nor no", OK2 "barrier shm=maybe -> pairwise\n", 3, 13, 0, "shm|yes|no|maybe"},
    {"shm: empty", "barrier shm= -> pairwise\n", 1, 9, 0, "shm|no value|empty|missing"},
    {"shm: twice", "allreduce shm=yes bytes=-8 shm=no -> pairwise\n", 1, 28, 0,
     "twice|duplicate|again|repeated|more than once|already"},
    {"shm: upper case", "barrier shm=YES -> pairwise\n", 1, 13, 0, "shm|yes|no|YES"},
    /* torus */
    {"torus: not sub", "allreduce torus=yes -> swing\n", 1, 17, 0, "torus|sub|yes"},
    /* the arrow */
    {"missing -> (algorithm name in its place)", "allreduce P=4 pairwise\n", 1, 15, 0, "->|arrow"},
    {"missing -> (end of line)", OK2 "allreduce P=4\n", 3, 0, 0, "->|arrow"},
    {"missing -> (collective alone)", "barrier\n", 1, 0, 0, "->|arrow"},
    {"nothing after ->", OK2 "allreduce P=4 ->\n", 3, 15, 17, "algorithm|nothing|missing|->"},
    {"nothing after -> but a comment", "barrier -> # pairwise\n", 1, 9, 11, "algorithm|nothing|missing|->"},
    /* the algorithm */
    {"unknown algorithm", "allreduce -> spiral\n", 1, 14, 0, "spiral|algorithm"},
    {"algorithm of another collective", OK2 "barrier P=2- -> bruck\n", 3, 17, 0, "bruck|algorithm"},
    /* knobs */
    {"knob on previous", "allreduce bytes=1M- -> previous bruck_ports=2\n", 1, 33, 0,
     "previous|knob|parameter"},
    {"knob of another algorithm", OK2 "allreduce -> bruck dissemination_ways=2\n", 3, 20, 0,
     "dissemination_ways|knob|parameter"},
    {"knob on an algorithm without one", "barrier -> pairwise dissemination_ways=2\n", 1, 21, 0,
     "dissemination_ways|knob|parameter"},
    {"knob value above the maximum", "allreduce -> bruck bruck_ports=17\n", 1, 32, 0,
     "range|17|16|value"},
    {"knob value below the minimum", "allreduce -> dissemination dissemination_ways=0\n", 1, 47, 0,
     "range|0|1|value"},
    {"knob value negative", "allreduce -> bruck bruck_ports=-1\n", 1, 32, 0, "range|number|value|-1"},
    {"knob value not a number", OK2 "allreduce -> bruck bruck_ports=two\n", 3, 32, 0,
     "two|number|value"},
    {"knob value empty", "allreduce -> bruck bruck_ports=\n", 1, 32, 0, "number|value|empty|missing"},
    {"knob value with junk", "allreduce -> bruck bruck_ports=3x\n", 1, 32, 0, "3x|number|value"},
    {"knob value overflow", "allreduce -> bruck bruck_ports=99999999999999999999\n", 1, 32, 0,
     "range|number|value|overflow|large"},
    /* what follows the algorithm */
    {"extra token after the knob", "allreduce -> bruck bruck_ports=2 again\n", 1, 34, 0,
     "again|extra|unexpected|trailing"},
    {"a second knob", OK2 "allreduce -> bruck bruck_ports=2 bruck_ports=3\n", 3, 34, 0,
     "bruck_ports|extra|unexpected|trailing|twice"},
    {"condition after ->", "allreduce -> pairwise P=4\n", 1, 23, 0, "condition|P=4|before"},
    {"condition after -> and knob", "allreduce -> bruck bruck_ports=2 bytes=-8\n", 1, 34, 0,
     "condition|bytes|before|extra|unexpected"},
    {"condition in place of the algorithm", "allreduce -> P=4 pairwise\n", 1, 14, 0,
     "condition|P=4|algorithm|before"},
    {"a second arrow", "allreduce -> -> pairwise\n", 1, 14, 0, "->|algorithm|arrow"},
    /* the parser stops at the first error: line 3 is reported, not line 4 */
    {"first of two errors", OK2 "allreduce P=x -> pairwise\nbcast -> pairwise\n", 3, 13, 0,
     "x|range|number"},
};

static bool reason_matches(const char *reason, const char *alts)
{
    char buf[256];
    char *save = NULL;
    snprintf(buf, sizeof(buf), "%s", alts);
    for (char *a = strtok_r(buf, "|", &save); NULL != a; a = strtok_r(NULL, "|", &save)) {
        size_t n = strlen(a);
        for (const char *s = reason; *s; ++s) {
            if (0 == strncasecmp(s, a, n)) {
                return true;
            }
        }
    }
    return false;
}

static void test_errors(void)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        const bad_t *b = &bad[i];
        mca_coll_loom_ruleset_t rs = {NULL, 0};
        mca_coll_loom_rules_error_t err;
        int rc;
        bool col_ok;

        memset(&err, 0, sizeof(err));
        err.line = err.column = -7;
        rc = mca_coll_loom_rules_parse(b->text, &rs, &err);
        CHECK(-1 == rc, "%s: accepted (rc %d, %d rules)", b->what, rc, rs.nrules);
        if (-1 != rc) {
            mca_coll_loom_rules_free(&rs);
            continue;
        }
        CHECK(0 == rs.nrules && NULL == rs.rules, "%s: rule set not left empty (%d rules)", b->what,
              rs.nrules);
        CHECK(err.line == b->line, "%s: line %d, expected %d (%s)", b->what, err.line, b->line, err.reason);
        col_ok = 0 == b->column ? err.column >= 1
                                : (err.column == b->column || (0 != b->colalt && err.column == b->colalt));
        if (0 == b->colalt) {
            CHECK(col_ok, "%s: column %d, expected %d (%s)", b->what, err.column, b->column, err.reason);
        } else {
            CHECK(col_ok, "%s: column %d, expected %d or %d (%s)", b->what, err.column, b->column,
                  b->colalt, err.reason);
        }
        CHECK('\0' != err.reason[0] && memchr(err.reason, '\0', sizeof(err.reason)),
              "%s: empty or unterminated reason", b->what);
        CHECK(reason_matches(err.reason, b->reason), "%s: reason \"%s\" mentions none of \"%s\"", b->what,
              err.reason, b->reason);
    }
}

/* ------------------------------------------------------------------------- */
/* 3. format -> parse round trip                                             */

static void normalize(mca_coll_loom_rule_t *r)
{
    /* the two spellings of an open end (see int_min_is / int_max_is) */
    if (r->min_P < 1) r->min_P = 1;
    if (r->min_nodes < 1) r->min_nodes = 1;
    if (r->min_rpn < 1) r->min_rpn = 1;
    if (r->max_P >= INT32_MAX) r->max_P = 0;
    if (r->max_nodes >= INT32_MAX) r->max_nodes = 0;
    if (r->max_rpn >= INT32_MAX) r->max_rpn = 0;
}

static bool same_rule(const mca_coll_loom_rule_t *a0, const mca_coll_loom_rule_t *b0)
{
    mca_coll_loom_rule_t a = *a0, b = *b0;
    normalize(&a);
    normalize(&b);
    return a.coll == b.coll && a.min_bytes == b.min_bytes && a.max_bytes == b.max_bytes
           && a.min_P == b.min_P && a.max_P == b.max_P && a.min_nodes == b.min_nodes
           && a.max_nodes == b.max_nodes && a.min_rpn == b.min_rpn && a.max_rpn == b.max_rpn
           && a.call_mask == b.call_mask && a.call_value == b.call_value
           && ((NULL == a.alg && NULL == b.alg)
               || (NULL != a.alg && NULL != b.alg && 0 == strcmp(a.alg, b.alg)))
           && a.knob == b.knob && a.sub_torus == b.sub_torus;
}

static void round_trip(const mca_coll_loom_rule_t *r, const char *what, int idx)
{
    char text[512], again[512];
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_rules_error_t err;
    int rc;

    memset(text, 'Z', sizeof(text));
    mca_coll_loom_rule_format(r, text, sizeof(text));
    CHECK(NULL != memchr(text, '\0', sizeof(text)), "%s #%d: format gave an unterminated string", what, idx);
    text[sizeof(text) - 1] = '\0';
    CHECK(0 == strncmp(text + ((r->call_mask & r->call_value & MCA_COLL_LOOM_CALL_NB) ? 1 : 0),
                       mca_coll_loom_coll_name(r->coll), strlen(mca_coll_loom_coll_name(r->coll)))
              && NULL != strstr(text, " -> ") && NULL == strchr(text, '\n'),
          "%s #%d: \"%s\" is not one rule line", what, idx, text);
    memset(&err, 0, sizeof(err));
    rc = mca_coll_loom_rules_parse(text, &rs, &err);
    CHECK(0 == rc && 1 == rs.nrules, "%s #%d: \"%s\" does not parse back: column %d: %s", what, idx, text,
          err.column, 0 == rc ? "(not one rule)" : err.reason);
    if (0 == rc && 1 == rs.nrules) {
        CHECK(same_rule(r, &rs.rules[0]), "%s #%d: \"%s\" parses to another rule", what, idx, text);
        CHECK(1 == rs.rules[0].line, "%s #%d: parsed alone, line %d", what, idx, rs.rules[0].line);
        mca_coll_loom_rule_format(&rs.rules[0], again, sizeof(again));
        CHECK(0 == strcmp(text, again), "%s #%d: format is not stable: \"%s\" then \"%s\"", what, idx, text,
              again);
    }
    mca_coll_loom_rules_free(&rs);
}

static void test_round_trip(void)
{
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_rules_error_t err;
    char small[8];

    if (0 == mca_coll_loom_rules_parse(good_text, &rs, &err)) {
        for (int i = 0; i < rs.nrules; ++i) {
            round_trip(&rs.rules[i], "good file rule", i);
        }
    }
    mca_coll_loom_rules_free(&rs);
    CHECK(mca_coll_loom_num_builtin_rules > 0, "no built-in rules");
    for (int i = 0; i < mca_coll_loom_num_builtin_rules; ++i) {
        round_trip(&mca_coll_loom_builtin_rules[i], "built-in rule", i);
    }
    /* a short buffer is truncated, not overrun */
    memset(small, 'Z', sizeof(small));
    mca_coll_loom_rule_format(&mca_coll_loom_builtin_rules[0], small, 5);
    CHECK(NULL != memchr(small, '\0', 5) && 'Z' == small[5] && 'Z' == small[7],
          "format wrote past a 5-byte buffer");
}

/* ------------------------------------------------------------------------- */
/* 4. decide with file rules                                                 */

static int knobs[64];

static bool is_builtin(const mca_coll_loom_rule_t *r)
{
    return NULL != r && r >= &mca_coll_loom_builtin_rules[0]
           && r < &mca_coll_loom_builtin_rules[mca_coll_loom_num_builtin_rules];
}

static int alg_index(mca_coll_loom_coll_t coll, const char *name)
{
    int a = mca_coll_loom_alg_find(coll, name);
    if (a < 0) {
        fprintf(stderr, "FATAL: the registry has no %s for %s\n", name, mca_coll_loom_coll_name(coll));
        exit(1);
    }
    return a;
}

static const char *alg_name(int a)
{
    return a >= 0 ? mca_coll_loom_algs[a]->name : "previous";
}

/* Parses `text` into rs; the test stops here when it does not parse. */
static void parse_or_die(const char *text, mca_coll_loom_ruleset_t *rs)
{
    mca_coll_loom_rules_error_t err;
    if (0 != mca_coll_loom_rules_parse(text, rs, &err)) {
        fprintf(stderr, "FAIL: test rules do not parse: line %d column %d: %s\n%s\n", err.line, err.column,
                err.reason, text);
        exit(1);
    }
}

typedef struct {
    mca_coll_loom_coll_t coll;
    size_t bytes;
    int P, nodes, rpn;
    unsigned call;
    int forced;
} call_t;

static void decide(const call_t *c, const mca_coll_loom_ruleset_t *rs, mca_coll_loom_choice_t *ch)
{
    mca_coll_loom_params_t p = shape(c->P, c->nodes, c->rpn, c->call);
    memset(ch, 0x5a, sizeof(*ch));
    mca_coll_loom_decide(c->coll, c->bytes, &p, knobs, c->forced, NULL != rs ? rs->rules : NULL,
                         NULL != rs ? rs->nrules : 0, ch);
}

/* The call gets exactly what it gets without a rules file. */
static void expect_builtin(const char *what, const call_t *c, const mca_coll_loom_ruleset_t *rs)
{
    mca_coll_loom_choice_t with, without;
    decide(c, rs, &with);
    decide(c, NULL, &without);
    CHECK(with.alg == without.alg && with.knob == without.knob && with.rule == without.rule,
          "%s: %s knob %d, but the built-in rules alone give %s knob %d", what, alg_name(with.alg), with.knob,
          alg_name(without.alg), without.knob);
    CHECK(is_builtin(with.rule), "%s: the choosing rule is not a built-in rule", what);
}

/* The call is decided by file rule number `idx` (0-based), which is on line `line`. */
static void expect_file(const char *what, const call_t *c, const mca_coll_loom_ruleset_t *rs, int idx,
                        int alg, int knob)
{
    mca_coll_loom_choice_t ch;
    decide(c, rs, &ch);
    CHECK(ch.alg == alg && ch.knob == knob, "%s: %s knob %d, expected %s knob %d", what, alg_name(ch.alg),
          ch.knob, alg_name(alg), knob);
    CHECK(ch.rule == &rs->rules[idx], "%s: chosen by %s rule (line %d), expected file rule %d (line %d)",
          what, is_builtin(ch.rule) ? "a built-in" : "another", NULL != ch.rule && !is_builtin(ch.rule)
                                                                  ? ch.rule->line : 0,
          idx, rs->rules[idx].line);
    CHECK(NULL == ch.refused, "%s: refused set without a forced algorithm", what);
}

static void test_decide(void)
{
    const int pw = alg_index(AR, "pairwise"), dis = alg_index(AR, "dissemination"), br = alg_index(AR, "bruck");
    const int bpw = alg_index(BA, "pairwise"), bdis = alg_index(BA, "dissemination");
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_choice_t ch;
    /* int sum, double sum, max, non-commutative user op */
    const unsigned isum = C | E | V, dsum = C, imax = C | E | I, user = 0;

    for (int a = 0; a < mca_coll_loom_num_algs; ++a) {
        /* configured knobs differ from the defaults, so "knob from the MCA parameter"
         * and "knob from the rule" cannot be confused */
        knobs[a] = mca_coll_loom_algs[a]->knob ? 5 : 0;
    }

    /* what the built-in rules do for the calls below (documented in docs/user/algorithms.md):
     * on one node with the shared segment hierarchical, without it dissemination */
    {
        call_t c = {AR, 4, 8, 1, 8, isum | S, -1};
        const int hier = alg_index(AR, "hierarchical");
        decide(&c, NULL, &ch);
        CHECK(ch.alg == hier && is_builtin(ch.rule), "built-in: 4-byte int sum at P=8 gives %s",
              alg_name(ch.alg));
        decide(&c, &rs, &ch); /* an empty rule set changes nothing */
        CHECK(ch.alg == hier && is_builtin(ch.rule), "empty rule set: 4-byte int sum at P=8 gives %s",
              alg_name(ch.alg));
        c.call = isum;
        decide(&c, NULL, &ch);
        CHECK(ch.alg == dis && is_builtin(ch.rule), "built-in without shm: 4-byte int sum at P=8 gives %s",
              alg_name(ch.alg));
    }

    /* one rank per node: bcast leaves hierarchical's chain beyond the 16 nodes it was
     * measured on (its fill grows with the nodes), reduce takes reduce-scatter + gather
     * from 2 KiB on 256 nodes ahead of the small reduces' row (docs/dev/model.md) */
    {
        const mca_coll_loom_coll_t BC = MCA_COLL_LOOM_COLL_BCAST, RE = MCA_COLL_LOOM_COLL_REDUCE;
        const unsigned NO_OP = C | E; /* what the component passes for a bcast */
        const mca_coll_loom_coll_t RSC = MCA_COLL_LOOM_COLL_REDUCE_SCATTER;
        const struct {
            mca_coll_loom_coll_t coll;
            size_t bytes;
            int P;
            unsigned call;
            const char *alg;
        } want[] = {
            {BC, 2048, 32, NO_OP, "hierarchical"},    {BC, 4096, 17, NO_OP, "halving_doubling"},
            {BC, 262143, 255, NO_OP, "halving_doubling"}, {BC, 262144, 100, NO_OP, "circulant"},
            {BC, 512 * 1024, 16, NO_OP, "hierarchical"}, {BC, 512 * 1024, 256, NO_OP, "circulant"},
            {BC, 256 * 1024, 256, NO_OP, "halving_doubling"}, {RE, 4096, 256, isum, "halving_doubling"},
            {RE, 8192, 1024, isum, "halving_doubling"}, {RE, 4096, 255, isum, "halving_doubling"},
            {RE, 1024, 256, isum, "hierarchical"},    {RE, 4096, 32, isum, "halving_doubling"},
            {RE, 262143, 100, dsum, "halving_doubling"}, {RE, 262144, 100, dsum, "circulant"},
            {RE, 65536, 16, dsum, NULL},               {RE, 8192, 16, isum, "hierarchical"},
            /* allreduce on one rank per node: radix-4 halving from 17 nodes and 2 KiB */
            {AR, 4096, 32, dsum, "knomial"},          {AR, 2048, 17, user, "knomial"},
            {AR, 4096, 16, dsum, "hierarchical"},     {AR, 1024, 32, dsum, "hierarchical"},
            {AR, 16384, 32, dsum, "halving_doubling"}, {AR, 16383, 4096, dsum, "knomial"},
            /* reduce_scatter, commutative: from the model from 17 nodes, tuned below */
            {RSC, 4096, 32, dsum, "knomial"},         {RSC, 65536, 32, dsum, "halving_doubling"},
            {RSC, 4096, 16, dsum, NULL},              {RSC, 4096, 32, user, NULL},
            {RSC, 32768, 256, dsum, "knomial"},       {RSC, 64 * 1024 * 1024, 32, dsum, "ring"},
            {RSC, 2 * 1024 * 1024, 100, dsum, "halving_doubling"},
        };
        int saved[sizeof(knobs) / sizeof(knobs[0])];
        memcpy(saved, knobs, sizeof(saved));
        memset(knobs, 0, sizeof(saved)); /* the defaults (5 B circulant blocks are refused) */
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); ++k) {
            call_t c = {want[k].coll, want[k].bytes, want[k].P, want[k].P, 1, want[k].call, -1};
            decide(&c, NULL, &ch);
            CHECK(ch.alg == (NULL != want[k].alg ? alg_index(want[k].coll, want[k].alg) : -1) && is_builtin(ch.rule),
                  "built-in: %s of %zu B on %d nodes of one rank gives %s, expected %s",
                  mca_coll_loom_coll_name(want[k].coll), want[k].bytes, want[k].P, alg_name(ch.alg),
                  NULL != want[k].alg ? want[k].alg : "previous");
        }
        /* hierarchical on nodes of several ranks: its phase among the nodes is what the
         * rules give one rank per node on as many nodes (from 17 nodes not the chain) */
        const struct {
            mca_coll_loom_coll_t coll;
            size_t bytes;
            int nodes, rpn;
            unsigned call;
            const char *net; /* NULL: hierarchical's own */
        } nets[] = {
            {BC, 512 * 1024, 64, 8, NO_OP, "circulant"},      {BC, 64 * 1024, 64, 8, NO_OP, "halving_doubling"},
            {BC, 512 * 1024, 16, 8, NO_OP, NULL},             {BC, 512 * 1024, 64, 1, NO_OP, NULL},
            {RE, 4 * 1024 * 1024, 16, 4, isum, "circulant"}, {RE, 4 * 1024 * 1024, 4, 2, isum, NULL},
        };
        const int hier = alg_index(BC, "hierarchical");
        for (size_t k = 0; k < sizeof(nets) / sizeof(nets[0]); ++k) {
            const int P = nets[k].nodes * nets[k].rpn;
            call_t c = {nets[k].coll, nets[k].bytes, P, nets[k].nodes, nets[k].rpn, nets[k].call, -1};
            const int want = NULL != nets[k].net ? alg_index(nets[k].coll, nets[k].net) + 1 : 0;
            decide(&c, NULL, &ch);
            if (1 == nets[k].rpn) {
                CHECK(0 == ch.net_alg, "built-in: %s of %zu B on %d nodes of one rank: net_alg %d set",
                      mca_coll_loom_coll_name(c.coll), c.bytes, P, ch.net_alg);
                continue;
            }
            CHECK(ch.alg == hier && ch.net_alg == want,
                  "built-in: %s of %zu B on %d nodes of %d ranks gives %s with %s among the nodes, expected "
                  "hierarchical with %s", mca_coll_loom_coll_name(c.coll), c.bytes, nets[k].nodes, nets[k].rpn,
                  alg_name(ch.alg), ch.net_alg > 0 ? alg_name(ch.net_alg - 1) : "its own",
                  NULL != nets[k].net ? nets[k].net : "its own");
        }
        memcpy(knobs, saved, sizeof(saved));
    }

    /* a matching file rule beats the built-in rules; the first matching file rule wins */
    parse_or_die("# precedence\n"
                 "allreduce bytes=-1K -> pairwise\n"         /* 0, line 2 */
                 "allreduce bytes=-2K -> bruck bruck_ports=3\n" /* 1, line 3 */
                 "allreduce bytes=-4K -> bruck\n"            /* 2, line 4 */
                 "barrier -> pairwise\n",                     /* 3, line 5 */
                 &rs);
    {
        call_t c = {AR, 4, 8, 1, 8, isum, -1};
        expect_file("file rule over built-in (4 B)", &c, &rs, 0, pw, 0);
        c.bytes = 1024;
        expect_file("first matching file rule (1 KiB)", &c, &rs, 0, pw, 0);
        c.bytes = 1025;
        expect_file("second file rule, its knob (1025 B)", &c, &rs, 1, br, 3);
        c.bytes = 3000;
        expect_file("third file rule, configured knob (3000 B)", &c, &rs, 2, br, 5);
        c.bytes = 4097;
        expect_builtin("beyond every file rule (4097 B)", &c, &rs);
        call_t b = {BA, 0, 8, 1, 8, C | E | I, -1};
        expect_file("barrier file rule", &b, &rs, 3, bpw, 0);
    }
    /* a forced algorithm beats the file */
    {
        call_t c = {AR, 4, 8, 1, 8, isum, dis};
        decide(&c, &rs, &ch);
        CHECK(ch.alg == dis && ch.knob == 5 && NULL == ch.rule && NULL == ch.refused,
              "forced dissemination: got %s knob %d", alg_name(ch.alg), ch.knob);
        call_t b = {BA, 0, 8, 1, 8, C | E | I, bdis};
        decide(&b, &rs, &ch);
        CHECK(ch.alg == bdis && NULL == ch.rule, "forced barrier dissemination: got %s", alg_name(ch.alg));
    }
    mca_coll_loom_rules_free(&rs);

    /* a size knob of 0 in a rule: loom's automatic size, whatever the MCA parameter says
     * (configured here: 5); no knob: the parameter's value */
    parse_or_die("allreduce bytes=-1K -> ring ring_segment_size=0\n" /* 0 */
                 "allreduce -> ring\n",                               /* 1 */
                 &rs);
    {
        const int ring = alg_index(AR, "ring");
        call_t c = {AR, 1024, 8, 1, 8, dsum, -1};
        CHECK(MCA_COLL_LOOM_KNOB_AUTO == rs.rules[0].knob && 0 == rs.rules[1].knob,
              "ring_segment_size=0 parsed as knob %d, no knob as %d", rs.rules[0].knob, rs.rules[1].knob);
        expect_file("ring_segment_size=0: automatic, not the parameter", &c, &rs, 0, ring, 0);
        c.bytes = 4096;
        expect_file("no knob: the parameter", &c, &rs, 1, ring, 5);
    }
    mca_coll_loom_rules_free(&rs);

    /* a file rule whose algorithm refuses the call is skipped, to the next file rule */
    parse_or_die("allreduce -> bruck bruck_ports=2\n"                     /* 0 */
                 "allreduce P=13 -> dissemination dissemination_ways=1\n" /* 1 */
                 "allreduce bytes=-64 -> pairwise\n",                     /* 2 */
                 &rs);
    {
        call_t c = {AR, 8, 8, 1, 8, isum, -1};
        expect_file("bruck accepts an int sum", &c, &rs, 0, br, 2);
        c.call = user;
        expect_file("bruck refuses a non-commutative op: next file rule", &c, &rs, 2, pw, 0);
        c.call = dsum;
        expect_file("bruck refuses a double sum: next file rule", &c, &rs, 2, pw, 0);
        c.bytes = 65;
        expect_builtin("bruck refuses, no other file rule: built-in", &c, &rs);
    }
    mca_coll_loom_rules_free(&rs);
    /* dissemination with 1 way has no adaption for P=13 (docs/user/algorithms.md): refused */
    parse_or_die("allreduce -> dissemination dissemination_ways=1\n"
                 "allreduce -> dissemination dissemination_ways=2\n",
                 &rs);
    {
        call_t c = {AR, 8, 13, 1, 13, isum, -1};
        expect_file("dissemination n=1 refuses P=13, n=2 serves it", &c, &rs, 1, dis, 2);
        c.P = c.rpn = 9;
        expect_file("dissemination n=1 serves P=9", &c, &rs, 0, dis, 1);
    }
    mca_coll_loom_rules_free(&rs);

    /* previous: alg -1, chosen by the file rule */
    parse_or_die("\n\nallreduce bytes=65- -> previous\n"
                 "allreduce op=noncommutative -> previous\n",
                 &rs);
    {
        call_t c = {AR, 65, 8, 1, 8, isum, -1};
        decide(&c, &rs, &ch);
        CHECK(-1 == ch.alg && ch.rule == &rs.rules[0] && 3 == ch.rule->line,
              "previous for 65 B: got %s, rule %s line %d", alg_name(ch.alg),
              ch.rule == &rs.rules[0] ? "file #0" : "other", NULL != ch.rule ? ch.rule->line : -1);
        c.bytes = 4;
        expect_builtin("previous rule, 4 B: below its range", &c, &rs);
        c.call = user;
        decide(&c, &rs, &ch);
        CHECK(-1 == ch.alg && ch.rule == &rs.rules[1], "previous for a non-commutative op: got %s",
              alg_name(ch.alg));
    }
    mca_coll_loom_rules_free(&rs);

    /* calls outside a rule's shape fall through to the built-in rules; inside, the
     * file rule decides */
    parse_or_die("allreduce P=4 -> pairwise\n"           /* 0 */
                 "allreduce nodes=2- -> pairwise\n"       /* 1 */
                 "allreduce rpn=-2 -> pairwise\n"         /* 2 */
                 "allreduce bytes=100-200 -> pairwise\n"  /* 3 */
                 "allreduce op=idempotent -> pairwise\n"  /* 4 */
                 "allreduce op=inexact -> previous\n"     /* 5 */
                 "barrier P=3 -> pairwise\n",              /* 6 */
                 &rs);
    {
        /* the base call: P=8 on one node, 8 bytes, int sum: no file rule matches */
        call_t base = {AR, 8, 8, 1, 8, isum, -1}, c;
        expect_builtin("no file rule matches", &base, &rs);
        c = base;
        c.P = c.rpn = 4;
        expect_file("P=4", &c, &rs, 0, pw, 0);
        c.P = c.rpn = 5;
        expect_builtin("P=5 outside P=4", &c, &rs);
        c = base;
        c.nodes = 2;
        c.rpn = 4;
        expect_file("nodes=2", &c, &rs, 1, pw, 0);
        c = base;
        c.nodes = 4;
        c.rpn = 2;
        expect_file("nodes=4 rpn=2 (nodes rule first)", &c, &rs, 1, pw, 0);
        c = base;
        c.rpn = 3;
        expect_builtin("rpn=3 outside rpn=-2", &c, &rs);
        c.rpn = 2;
        expect_file("rpn=2", &c, &rs, 2, pw, 0);
        c = base;
        c.bytes = 99;
        expect_builtin("99 B outside 100-200", &c, &rs);
        c.bytes = 201;
        expect_builtin("201 B outside 100-200", &c, &rs);
        c.bytes = 150;
        expect_file("150 B", &c, &rs, 3, pw, 0);
        c = base;
        c.call = imax;
        expect_file("max is idempotent", &c, &rs, 4, pw, 0);
        c.call = dsum;
        decide(&c, &rs, &ch);
        CHECK(-1 == ch.alg && ch.rule == &rs.rules[5], "double sum (inexact): got %s", alg_name(ch.alg));
        call_t b = {BA, 0, 8, 1, 8, C | E | I, -1};
        expect_builtin("barrier P=8 outside P=3", &b, &rs);
        b.P = b.rpn = 3;
        expect_file("barrier P=3", &b, &rs, 6, bpw, 0);
    }
    mca_coll_loom_rules_free(&rs);

    /* a rule for one collective never decides the other */
    parse_or_die("barrier -> pairwise\nallreduce -> bruck\n", &rs);
    {
        call_t c = {AR, 8, 8, 1, 8, isum, -1};
        expect_file("allreduce skips the barrier rule", &c, &rs, 1, br, 5);
        call_t b = {BA, 0, 8, 1, 8, C | E | I, -1};
        expect_file("barrier", &b, &rs, 0, bpw, 0);
    }
    mca_coll_loom_rules_free(&rs);
    (void) bdis;
}

/* ------------------------------------------------------------------------- */
/* 5. load()                                                                 */

#define LOOM_RULES_TEMPLATE "/tmp/loom-test-rules.XXXXXX"

static void test_load(void)
{
    char path[] = LOOM_RULES_TEMPLATE;
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_rules_error_t err;
    int fd, rc;
    FILE *f;

    fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp failed");
    if (fd < 0) {
        return;
    }
    f = fdopen(fd, "w");
    fputs(good_text, f);
    fclose(f);
    rc = mca_coll_loom_rules_load(path, &rs, &err);
    CHECK(0 == rc && NGOOD == rs.nrules, "load(%s): rc %d, %d rules (%s)", path, rc, rs.nrules,
          0 == rc ? "" : err.reason);
    for (int i = 0; 0 == rc && i < rs.nrules && i < NGOOD; ++i) {
        check_rule(&rs.rules[i], &good_want[i], "loaded file");
    }
    mca_coll_loom_rules_free(&rs);

    /* a bad file: the error of the text, line and column */
    f = fopen(path, "w");
    fputs(OK2 "allreduce -> spiral\n", f);
    fclose(f);
    memset(&err, 0, sizeof(err));
    rc = mca_coll_loom_rules_load(path, &rs, &err);
    CHECK(-1 == rc && 3 == err.line && 14 == err.column && 0 == rs.nrules,
          "load of a bad file: rc %d line %d column %d (%s)", rc, err.line, err.column, err.reason);
    mca_coll_loom_rules_free(&rs);

    /* an empty file */
    f = fopen(path, "w");
    fclose(f);
    rc = mca_coll_loom_rules_load(path, &rs, &err);
    CHECK(0 == rc && 0 == rs.nrules, "load of an empty file: rc %d (%s)", rc, 0 == rc ? "" : err.reason);
    mca_coll_loom_rules_free(&rs);
    unlink(path);

    /* a path that does not exist: line 0 and a reason */
    memset(&err, 0, sizeof(err));
    err.line = -7;
    rc = mca_coll_loom_rules_load(path, &rs, &err);
    CHECK(-1 == rc && 0 == err.line && '\0' != err.reason[0] && 0 == rs.nrules && NULL == rs.rules,
          "load of a missing file: rc %d line %d reason \"%s\"", rc, err.line, err.reason);
    CHECK(reason_matches(err.reason, "No such file|not exist|cannot|can't|could not|open|read"),
          "load of a missing file: reason \"%s\"", err.reason);

    /* a directory cannot be read as a file either */
    memset(&err, 0, sizeof(err));
    err.line = -7;
    rc = mca_coll_loom_rules_load("/", &rs, &err);
    CHECK(-1 == rc && 0 == err.line && '\0' != err.reason[0], "load(\"/\"): rc %d line %d reason \"%s\"", rc,
          err.line, err.reason);
    mca_coll_loom_rules_free(&rs);

    /* nor a device that never ends (before: read until memory ran out) */
    memset(&err, 0, sizeof(err));
    rc = mca_coll_loom_rules_load("/dev/zero", &rs, &err);
    CHECK(-1 == rc && 0 == rs.nrules && reason_matches(err.reason, "not a regular file"),
          "load(/dev/zero): rc %d reason \"%s\"", rc, err.reason);
    mca_coll_loom_rules_free(&rs);

    /* a regular file larger than any rules file: refused, not parsed */
    snprintf(path, sizeof(path), "%s", LOOM_RULES_TEMPLATE);
    fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp failed");
    if (fd >= 0) {
        f = fdopen(fd, "w");
        for (int i = 0; i <= MCA_COLL_LOOM_RULES_MAX_BYTES / 32; ++i) {
            fputs("# a comment line of 32 bytes ..\n", f);
        }
        fclose(f);
        memset(&err, 0, sizeof(err));
        rc = mca_coll_loom_rules_load(path, &rs, &err);
        CHECK(-1 == rc && 0 == rs.nrules && reason_matches(err.reason, "larger than"),
              "load of a %d-byte file: rc %d reason \"%s\"", MCA_COLL_LOOM_RULES_MAX_BYTES + 32, rc, err.reason);
        mca_coll_loom_rules_free(&rs);
        unlink(path);
    }
}

/* i<coll>: a rule for the non-blocking and persistent forms only; a plain one serves
 * both forms */
static void test_nonblocking_rules(void)
{
    const char *text = "iallreduce bytes=-64 -> pairwise\n"
                       "allreduce bytes=-64 -> bruck\n"
                       "ibcast -> previous\n";
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_rules_error_t err;
    const unsigned CM = MCA_COLL_LOOM_CALL_COMMUTATIVE, NBF = MCA_COLL_LOOM_CALL_NB;
    char buf[256];

    CHECK(0 == mca_coll_loom_rules_parse(text, &rs, &err) && 3 == rs.nrules, "i<coll> rules: %s", err.reason);
    if (3 == rs.nrules) {
        CHECK(matches(&rs.rules[0], MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 4, 1, 4, CM | NBF),
              "iallreduce does not match a non-blocking allreduce");
        CHECK(!matches(&rs.rules[0], MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 4, 1, 4, CM),
              "iallreduce matches a blocking allreduce");
        CHECK(matches(&rs.rules[1], MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 4, 1, 4, CM | NBF) &&
                  matches(&rs.rules[1], MCA_COLL_LOOM_COLL_ALLREDUCE, 8, 4, 1, 4, CM),
              "a plain allreduce rule does not serve both forms");
        CHECK(MCA_COLL_LOOM_COLL_BCAST == rs.rules[2].coll && NULL == rs.rules[2].alg, "ibcast -> previous");
        mca_coll_loom_rule_format(&rs.rules[0], buf, sizeof(buf));
        CHECK(0 == strncmp(buf, "iallreduce ", 11), "formatted as '%s'", buf);
        for (int i = 0; i < rs.nrules; ++i) {
            round_trip(&rs.rules[i], "i<coll> rule", i);
        }
    }
    mca_coll_loom_rules_free(&rs);
    CHECK(0 != mca_coll_loom_rules_parse("iallreducex -> pairwise\n", &rs, &err) &&
              NULL != strstr(err.reason, "unknown collective"),
          "iallreducex accepted: %s", err.reason);
    mca_coll_loom_rules_free(&rs);
}

/* Transport rules (coll_loom_transport auto): parsed, formatted, walked apart from the
 * algorithm rules, the file's before the built-in ones. */
static void test_transport_rules(void)
{
    const char *text = "allreduce bytes=-1K -> transport=pml\n"
                       "allreduce bytes=-64 -> bruck\n"
                       "bcast nodes=2- -> transport=ucx\n";
    mca_coll_loom_ruleset_t rs = {NULL, 0};
    mca_coll_loom_rules_error_t err;
    mca_coll_loom_choice_t ch;
    const unsigned CM = MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT;
    char buf[256];

    CHECK(0 == mca_coll_loom_rules_parse(text, &rs, &err) && 3 == rs.nrules, "transport rules: %s", err.reason);
    if (3 == rs.nrules) {
        CHECK(MCA_COLL_LOOM_RULE_PML == rs.rules[0].transport && NULL == rs.rules[0].alg &&
                  0 == rs.rules[1].transport && MCA_COLL_LOOM_RULE_UCX == rs.rules[2].transport,
              "transport rules parsed as %d, %d, %d", rs.rules[0].transport, rs.rules[1].transport,
              rs.rules[2].transport);
        mca_coll_loom_rule_format(&rs.rules[0], buf, sizeof(buf));
        CHECK(0 == strcmp(buf, "allreduce bytes=-1K -> transport=pml") ||
                  0 == strcmp(buf, "allreduce bytes=-1024 -> transport=pml"),
              "formatted as '%s'", buf);
        for (int i = 0; i < rs.nrules; ++i) {
            round_trip(&rs.rules[i], "transport rule", i);
        }
        /* a transport rule chooses no algorithm: the 32-byte allreduce gets bruck from the
         * second rule and the pml from the first */
        call_t c = {AR, 32, 8, 4, 2, CM, -1};
        decide(&c, &rs, &ch);
        CHECK(ch.alg == alg_index(AR, "bruck") && MCA_COLL_LOOM_RULE_PML == ch.transport &&
                  &rs.rules[0] == ch.transport_rule,
              "32-byte allreduce: %s, transport %d", alg_name(ch.alg), ch.transport);
        /* past the file's transport rule: the built-in one (ucx between nodes, small) */
        c.bytes = 4096;
        decide(&c, &rs, &ch);
        CHECK(MCA_COLL_LOOM_RULE_UCX == ch.transport && is_builtin(ch.transport_rule),
              "4 KiB allreduce on 4 nodes: transport %d", ch.transport);
        c.nodes = 1;
        c.rpn = 8;
        decide(&c, &rs, &ch);
        CHECK(0 == ch.transport && NULL == ch.transport_rule, "4 KiB allreduce on one node: transport %d",
              ch.transport);
        /* a forced algorithm leaves the transport to the rules */
        c = (call_t) {MCA_COLL_LOOM_COLL_BCAST, 1 << 20, 8, 4, 2, 0, alg_index(MCA_COLL_LOOM_COLL_BCAST, "binomial")};
        decide(&c, &rs, &ch);
        CHECK(MCA_COLL_LOOM_RULE_UCX == ch.transport && &rs.rules[2] == ch.transport_rule,
              "forced bcast: transport %d", ch.transport);
    }
    mca_coll_loom_rules_free(&rs);
    CHECK(0 != mca_coll_loom_rules_parse("allreduce -> transport=tcp\n", &rs, &err) &&
              NULL != strstr(err.reason, "neither 'pml' nor 'ucx'") && 24 == err.column,
          "transport=tcp accepted or misreported: column %d: %s", err.column, err.reason);
    mca_coll_loom_rules_free(&rs);
    CHECK(0 != mca_coll_loom_rules_parse("allreduce -> transport=ucx ring\n", &rs, &err) &&
              NULL != strstr(err.reason, "names no algorithm"),
          "an algorithm after a transport accepted: %s", err.reason);
    mca_coll_loom_rules_free(&rs);
}

int main(void)
{
    test_transport_rules();
    test_nonblocking_rules();
    test_good_file();
    test_errors();
    test_round_trip();
    test_decide();
    test_load();
    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("all %d rules checks passed\n", checks);
    return 0;
}
