/*
 * loom: the algorithm registry: the table of every algorithm's entry (each in its own file,
 * collected by the build), lookups and the checks every algorithm shares.
 */
#include <stdint.h>
#include <string.h>

#include "opal/loom/loom_registry.h"

/* The entries, in the order the build lists the algorithms' files (Makefile.am,
 * LOOM_ALG_SOURCES): that order is the public enum value of each name. */
#define MCA_COLL_LOOM_ALG_ENTRY(name) extern const mca_coll_loom_alg_t mca_coll_loom_alg_##name;
#include "opal/loom/loom_alg_list.h"
#undef MCA_COLL_LOOM_ALG_ENTRY

const mca_coll_loom_alg_t *const mca_coll_loom_algs[] = {
#define MCA_COLL_LOOM_ALG_ENTRY(name) &mca_coll_loom_alg_##name,
#include "opal/loom/loom_alg_list.h"
#undef MCA_COLL_LOOM_ALG_ENTRY
};

const int mca_coll_loom_num_algs = (int) (sizeof(mca_coll_loom_algs) / sizeof(mca_coll_loom_algs[0]));

const char *mca_coll_loom_coll_name(mca_coll_loom_coll_t coll)
{
#define LOOM_COLL_NAME(ID, name, arg) #name,
    static const char *names[MCA_COLL_LOOM_NUM_COLLS] = {MCA_COLL_LOOM_COLLECTIVES(LOOM_COLL_NAME, ~)};
#undef LOOM_COLL_NAME
    return (unsigned) coll < MCA_COLL_LOOM_NUM_COLLS ? names[coll] : "?";
}

int mca_coll_loom_alg_find(mca_coll_loom_coll_t coll, const char *name)
{
    for (int i = 0; NULL != name && i < mca_coll_loom_num_algs; ++i) {
        if (mca_coll_loom_alg_serves(i, coll) && 0 == strcmp(mca_coll_loom_algs[i]->name, name)) {
            return i;
        }
    }
    return -1;
}

static int knob_or_default(const mca_coll_loom_alg_t *a, int knob)
{
    if (NULL == a->knob) {
        return 0;
    }
    return (knob < a->knob_min || knob > a->knob_max) ? a->knob_default : knob;
}

const char *mca_coll_loom_alg_refusal(int alg, const mca_coll_loom_params_t *p)
{
    const mca_coll_loom_alg_t *a = mca_coll_loom_algs[alg];
    mca_coll_loom_params_t q = *p;

    if ((a->needs & MCA_COLL_LOOM_NEEDS_COMMUTATIVE) && !(p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE)) {
        return "the op is not commutative and the algorithm combines out of rank order";
    }
    if (!(p->call & MCA_COLL_LOOM_CALL_COMMUTATIVE) && !mca_coll_loom_alg_keeps_order(alg, p->coll)) {
        return a->commutative_why;
    }
    if ((a->needs & MCA_COLL_LOOM_NEEDS_EXACT) && !(p->call & MCA_COLL_LOOM_CALL_EXACT)) {
        return "the op is not exactly associative on this datatype (floating point or user op) "
               "and the algorithm combines in a rank-dependent order";
    }
    q.knob = knob_or_default(a, p->knob);
    if (NULL != a->can_serve && !a->can_serve(&q)) {
        return NULL != a->refusal_of ? a->refusal_of(&q)
                                     : "no adaption exists for this communicator size and number of ways";
    }
    return NULL;
}

int mca_coll_loom_alg_build(int alg, mca_coll_loom_sched_t *s, const mca_coll_loom_params_t *p)
{
    const mca_coll_loom_alg_t *a;
    mca_coll_loom_params_t q;
    int rc;

    if (alg < 0 || alg >= mca_coll_loom_num_algs) {
        return MCA_COLL_LOOM_ERR_BADPARAM;
    }
    a = mca_coll_loom_algs[alg];
    q = *p;
    q.knob = knob_or_default(a, p->knob);
    mca_coll_loom_sched_reset(s);
    rc = a->build(s, &q);
    if (MCA_COLL_LOOM_OK != rc) {
        return rc;
    }
    return mca_coll_loom_sched_finish(s);
}

int mca_coll_loom_alg_segs(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob,
                           const mca_coll_loom_segs_model_t *model)
{
    const mca_coll_loom_alg_t *a = mca_coll_loom_algs[alg];
    int segs = NULL != a->segs ? a->segs(alg, coll, P, bytes, knob, model) : 1;

    return segs < 1 ? 1 : segs;
}

int mca_coll_loom_segs_by_model(int alg, mca_coll_loom_coll_t coll, int P, size_t bytes, int knob, int parts,
                                size_t min_auto, const mca_coll_loom_segs_model_t *model)
{
    const size_t np = (size_t) (parts > 0 ? parts : 1), unit = bytes / np;
    /* bound the schedule's length: 2(P-1)*segs steps in parts, segs rounds otherwise */
    size_t cap = np > 1 ? (size_t) 65536 / np : 16384, segs;

    if (cap < 1) {
        cap = 1;
    }
    if (knob > 0) {
        segs = (unit + (size_t) knob - 1) / (size_t) knob;
    } else {
        const int m = NULL != model ? model->auto_segs(model->ctx, alg, coll, P, bytes) : 1;
        segs = m > 1 ? (size_t) m : 1;
        if (segs > (unit + min_auto - 1) / min_auto) {
            segs = (unit + min_auto - 1) / min_auto;
        }
    }
    if (segs < 1) {
        segs = 1;
    }
    return (int) (segs > cap ? cap : segs);
}
