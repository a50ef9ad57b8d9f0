/*
 * loom: choosing an algorithm for one call.  The built-in rules are data (a table
 * in loom_decide.c), walked first-match; a forced algorithm is honoured when its
 * declared restrictions allow the call and otherwise replaced by the rules' choice.
 */
#ifndef MCA_COLL_LOOM_DECIDE_H
#define MCA_COLL_LOOM_DECIDE_H

#include <stddef.h>

#include "opal/loom/loom_registry.h"

/* One built-in rule: applies when bytes <= max_bytes, min_P <= P <= max_P and
 * (call & call_mask) == call_value.  alg NULL means "leave the call to the previous
 * component".  knob 0 means the value of the algorithm's MCA parameter. */
typedef struct {
    mca_coll_loom_coll_t coll;
    size_t max_bytes;
    int min_P, max_P;
    unsigned call_mask, call_value;
    const char *alg;
    int knob;
} mca_coll_loom_rule_t;

extern const mca_coll_loom_rule_t mca_coll_loom_builtin_rules[];
extern const int mca_coll_loom_num_builtin_rules;

typedef struct {
    int alg;            /* registry index, or -1: previous component */
    int knob;           /* knob value to build with */
    int rule;           /* index of the built-in rule that chose, -1 when forced or none */
    const char *why;    /* short static text: "forced", "rule", "no rule" */
    const char *refused;/* when a forced algorithm was refused: the reason, else NULL */
} mca_coll_loom_choice_t;

/* p->P and p->call describe the call; knobs[alg] is the configured knob of each
 * algorithm; forced is a registry index or -1 for auto. */
void mca_coll_loom_decide(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                          const int *knobs, int forced, mca_coll_loom_choice_t *choice);

#endif /* MCA_COLL_LOOM_DECIDE_H */
