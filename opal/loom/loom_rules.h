/*
 * loom: rules files (coll_loom_rules_file).  A line-oriented text format, documented
 * in docs/user/tuning.md:
 *
 *   # comment
 *   <collective> [P=<range>] [nodes=<range>] [rpn=<range>] [op=<prop>[,<prop>...]]
 *                [bytes=<range>] -> <algorithm>|previous [<knob>=<value>]
 *   <collective> [conditions as above] -> transport=pml|ucx
 *
 * A range is N, A-B, A- or -B; byte counts take K, M, G (binary) suffixes.  Op
 * properties: commutative, noncommutative, exact, inexact, idempotent, nonidempotent.
 * The first rule that matches a call wins; file rules come before the built-in ones.
 * Transport rules (coll_loom_transport auto) are walked apart from algorithm rules.
 */
#ifndef MCA_COLL_LOOM_RULES_H
#define MCA_COLL_LOOM_RULES_H

#include <stddef.h>

#include "opal/loom/loom_decide.h"

typedef struct {
    mca_coll_loom_rule_t *rules;
    int nrules;
} mca_coll_loom_ruleset_t;

/* Where and why parsing failed. */
typedef struct {
    int line;          /* 1-based; 0 when the file could not be read */
    int column;        /* 1-based column of the offending token */
    char reason[400];
} mca_coll_loom_rules_error_t;

/* Parses `text` (a whole file).  On success fills *out (free with
 * mca_coll_loom_rules_free) and returns 0; on the first error fills *err, leaves *out
 * empty and returns -1.  Every algorithm name is checked against the registry. */
int mca_coll_loom_rules_parse(const char *text, mca_coll_loom_ruleset_t *out,
                              mca_coll_loom_rules_error_t *err);

/* Largest rules file read: a rule is one short line, so anything larger is not one. */
#define MCA_COLL_LOOM_RULES_MAX_BYTES (1 << 20)

/* Reads and parses the regular file at `path` (errors as above; line 0 for I/O errors,
 * a file that is not regular or larger than MCA_COLL_LOOM_RULES_MAX_BYTES). */
int mca_coll_loom_rules_load(const char *path, mca_coll_loom_ruleset_t *out,
                             mca_coll_loom_rules_error_t *err);

void mca_coll_loom_rules_free(mca_coll_loom_ruleset_t *rs);

/* One rule in the file syntax (parsing the output gives the same rule back). */
void mca_coll_loom_rule_format(const mca_coll_loom_rule_t *r, char *buf, size_t len);

#endif /* MCA_COLL_LOOM_RULES_H */
