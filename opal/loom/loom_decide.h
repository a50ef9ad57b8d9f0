/*
 * loom: choosing an algorithm for one call.  The built-in rules are data (a table
 * in loom_decide.c), walked first-match; a forced algorithm is honoured when its
 * declared restrictions allow the call and otherwise replaced by the rules' choice.
 */
#ifndef MCA_COLL_LOOM_DECIDE_H
#define MCA_COLL_LOOM_DECIDE_H

#include <stddef.h>

#include "opal/loom/loom_registry.h"

/* One rule, built in or from a rules file.  It applies to a call of collective `coll`
 * when min_bytes <= bytes <= max_bytes, the communicator's P, node count and largest
 * ranks-per-node lie in [min, max] (max 0: no upper bound), and
 * (call & call_mask) == call_value.  alg NULL means "leave the call to the previous
 * component".  knob 0 means the value of the algorithm's MCA parameter,
 * MCA_COLL_LOOM_KNOB_AUTO the algorithm's automatic size whatever the parameter says
 * (a rules file's `=0` for a size knob, whose 0 means "chosen by loom"). */
#define MCA_COLL_LOOM_KNOB_AUTO (-1)

typedef struct {
    mca_coll_loom_coll_t coll;
    size_t min_bytes, max_bytes;
    int min_P, max_P;
    int min_nodes, max_nodes;
    int min_rpn, max_rpn;
    unsigned call_mask, call_value;
    const char *alg;
    int knob;
    bool sub_torus;     /* torus=sub: the communicator is a whole torus or sub-torus of
                           power-of-two rings, one rank per node
                           (mca_coll_loom_swing_sub_torus) */
    int transport;      /* a transport rule (MCA_COLL_LOOM_RULE_PML, _UCX: "-> transport=..."),
                           which chooses how the call's messages travel and no algorithm;
                           0: an algorithm rule */
    int line;           /* line in the rules file, 0 for a built-in rule */
} mca_coll_loom_rule_t;

/* the transports a rule can name (coll_loom_transport auto follows them) */
#define MCA_COLL_LOOM_RULE_PML 1
#define MCA_COLL_LOOM_RULE_UCX 2

extern const mca_coll_loom_rule_t mca_coll_loom_builtin_rules[];
extern const int mca_coll_loom_num_builtin_rules;

typedef struct {
    int alg;            /* registry index, or -1: previous component */
    int knob;           /* knob value to build with */
    const mca_coll_loom_rule_t *rule; /* the rule that chose (file or built-in), NULL when
                                         forced or when no rule matched */
    const char *why;    /* short static text: "forced", "rule", "no rule" */
    const char *refused;/* when a forced algorithm was refused: the reason, else NULL */
    int transport;      /* MCA_COLL_LOOM_RULE_PML or _UCX from the first transport rule that
                           matches the call, 0 when none does */
    const mca_coll_loom_rule_t *transport_rule;
    int net_alg, net_knob; /* hierarchical's phase among the nodes (params.net_alg, net_knob) */
} mca_coll_loom_choice_t;

/* The phase among the nodes of `hierarchical`'s bcast or reduce on nodes of several ranks:
 * what the rules choose for the same call on one rank per node, as many nodes (its chain
 * fills in a segment per node: from 17 nodes the rules take log-depth algorithms).  Sets
 * *net_alg to 1 + that algorithm's index and *net_knob to its knob, or *net_alg to 0 (the
 * chain or tree of its own) when they choose hierarchical, the previous component, or an
 * algorithm that cannot serve the phase. */
void mca_coll_loom_decide_net(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                              const int *knobs, const mca_coll_loom_rule_t *file_rules, int nfile, int *net_alg,
                              int *net_knob);

/* p->P, p->nodes, p->rpn and p->call describe the call; knobs[alg] is the configured
 * knob of each algorithm; forced is a registry index or -1 for auto.  The rules of a
 * rules file (nfile of them, may be 0) are tried before the built-in ones. */
void mca_coll_loom_decide(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                          const int *knobs, int forced, const mca_coll_loom_rule_t *file_rules,
                          int nfile, mca_coll_loom_choice_t *choice);

/* Algorithm rules and transport rules are walked apart: the first algorithm rule that
 * matches chooses the algorithm, the first transport rule that matches the transport. */

/* Does rule r apply to this call (collective, size, communicator shape, op)? */
bool mca_coll_loom_rule_matches(const mca_coll_loom_rule_t *r, mca_coll_loom_coll_t coll, size_t bytes,
                                const mca_coll_loom_params_t *p);

#endif /* MCA_COLL_LOOM_DECIDE_H */
