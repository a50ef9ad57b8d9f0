/*
 * loom: the built-in selection rules and the decision procedure.
 *
 * The table is data, walked first-match.  Its thresholds come from test/bench on this
 * project's development machine (docs/performance.md); a later rules file replaces
 * or overrides it.  Large allreduces go to the previous component (tuned) until loom
 * has bandwidth-optimal algorithms: every algorithm here moves the whole vector in
 * each of its log P rounds.
 */
#include <stdint.h>

#include "opal/loom/loom_decide.h"

#define ANY_P 1, INT32_MAX
#define CE    (MCA_COLL_LOOM_CALL_COMMUTATIVE | MCA_COLL_LOOM_CALL_EXACT)

const mca_coll_loom_rule_t mca_coll_loom_builtin_rules[] = {
    /* coll                        max bytes  P        call mask/value  algorithm       knob */
    {MCA_COLL_LOOM_COLL_BARRIER,   SIZE_MAX,  ANY_P,   0, 0,            "dissemination", 0},
    /* two ranks: every algorithm is one exchange, pairwise has the fewest copies;
     * above 2 KiB tuned's ring sends halves, which stay under the shared-memory
     * eager limit where a whole vector does not (1.8x faster at 4 KiB here) */
    {MCA_COLL_LOOM_COLL_ALLREDUCE, 2048,      2, 2,    0, 0,            "pairwise",      0},
    {MCA_COLL_LOOM_COLL_ALLREDUCE, SIZE_MAX,  2, 2,    0, 0,            NULL,            0},
    /* latency-bound: fewest rounds (ceil(log_{n+1} P)); dissemination refuses the
     * (n, P) without an adaption, and Bruck serves every P */
    {MCA_COLL_LOOM_COLL_ALLREDUCE, 2048,      ANY_P,   CE, CE,          "dissemination", 0},
    {MCA_COLL_LOOM_COLL_ALLREDUCE, 2048,      ANY_P,   CE, CE,          "bruck",         0},
    /* rank order kept, bit-identical floating point, any op */
    {MCA_COLL_LOOM_COLL_ALLREDUCE, 8192,      ANY_P,   0, 0,            "pairwise",      0},
    {MCA_COLL_LOOM_COLL_ALLREDUCE, SIZE_MAX,  ANY_P,   0, 0,            NULL,            0},
};

const int mca_coll_loom_num_builtin_rules =
    (int) (sizeof(mca_coll_loom_builtin_rules) / sizeof(mca_coll_loom_builtin_rules[0]));

static bool rule_matches(const mca_coll_loom_rule_t *r, mca_coll_loom_coll_t coll, size_t bytes,
                         const mca_coll_loom_params_t *p)
{
    return r->coll == coll && bytes <= r->max_bytes && p->P >= r->min_P && p->P <= r->max_P
           && (p->call & r->call_mask) == r->call_value;
}

/* Can algorithm `alg` run this call with knob `knob`? */
static bool accepts(int alg, const mca_coll_loom_params_t *p, int knob)
{
    mca_coll_loom_params_t q = *p;
    q.knob = knob;
    return NULL == mca_coll_loom_alg_refusal(alg, &q);
}

void mca_coll_loom_decide(mca_coll_loom_coll_t coll, size_t bytes, const mca_coll_loom_params_t *p,
                          const int *knobs, int forced, mca_coll_loom_choice_t *choice)
{
    choice->alg = -1;
    choice->knob = 0;
    choice->rule = -1;
    choice->why = "no rule";
    choice->refused = NULL;

    if (forced >= 0) {
        mca_coll_loom_params_t q = *p;
        q.knob = knobs[forced];
        choice->refused = mca_coll_loom_alg_refusal(forced, &q);
        if (NULL == choice->refused) {
            choice->alg = forced;
            choice->knob = knobs[forced];
            choice->why = "forced";
            return;
        }
    }

    for (int i = 0; i < mca_coll_loom_num_builtin_rules; ++i) {
        const mca_coll_loom_rule_t *r = &mca_coll_loom_builtin_rules[i];
        int alg, knob;
        if (!rule_matches(r, coll, bytes, p)) {
            continue;
        }
        if (NULL == r->alg) {
            if (NULL != choice->refused) {
                continue; /* a refused forced algorithm is replaced by a loom algorithm */
            }
            choice->rule = i;
            choice->why = "rule: previous component";
            return;
        }
        alg = mca_coll_loom_alg_find(coll, r->alg);
        if (alg < 0) {
            continue;
        }
        knob = r->knob > 0 ? r->knob : knobs[alg];
        if (accepts(alg, p, knob)) {
            choice->alg = alg;
            choice->knob = knob;
            choice->rule = i;
            choice->why = NULL != choice->refused ? "forced algorithm refused; rule" : "rule";
            return;
        }
    }

    if (NULL != choice->refused) {
        /* no rule named a loom algorithm for this call: take the first that accepts it */
        for (int alg = 0; alg < mca_coll_loom_num_algs; ++alg) {
            if (mca_coll_loom_alg_serves(alg, coll) && accepts(alg, p, knobs[alg])) {
                choice->alg = alg;
                choice->knob = knobs[alg];
                choice->why = "forced algorithm refused; first algorithm that accepts the call";
                return;
            }
        }
    }
}
