/*
 * coll/loom: what differs between the Open MPI series loom builds for.
 *
 * A coll component is built for one series: Open MPI checks the component's
 * coll API version exactly when it loads it (4.1: 2.0.0, 5.0: 2.4.0, with a
 * different module layout).  Everything the component needs that is spelled
 * differently in the two series is here, so the rest of the source is written
 * once.  docs/dev/series.md lists the differences and how each is tested.
 */
#ifndef MCA_COLL_LOOM_COMPAT_H
#define MCA_COLL_LOOM_COMPAT_H

#include "ompi_config.h"

#include <inttypes.h>
#include <stdio.h>

#include "ompi/attribute/attribute.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/coll_base_util.h"

#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1
#include "opal/mca/pmix/pmix.h"
#include "opal/threads/mutex.h"

#define MCA_COLL_LOOM_COLL_VERSION MCA_COLL_BASE_VERSION_2_0_0
/* Visibility of the component structure, the one symbol Open MPI looks up. */
#define MCA_COLL_LOOM_DECLSPEC OMPI_MODULE_DECLSPEC
#define MCA_COLL_LOOM_PMIX_HOSTNAME OPAL_PMIX_HOSTNAME
#define MCA_COLL_LOOM_PMIX_STRING OPAL_STRING

/* The two objects (op, datatype or two datatypes) a non-blocking request keeps alive. */
#define MCA_COLL_LOOM_NBC_OBJS(req) ((req)->data.objs.objs)

/* The hostname the runtime already keeps for a peer process, or NULL (then loom asks
 * PMIx, with MCA_COLL_LOOM_PMIX_HOSTNAME). */
#define MCA_COLL_LOOM_PROC_HOSTNAME(proc) ((proc)->super.proc_hostname)

/* Info subscriptions: the callback's strings (5.0 made them const). */
typedef char mca_coll_loom_info_str_t;

/* The type of a communicator attribute's copy function inside Open MPI. */
typedef MPI_Comm_internal_copy_attr_function mca_coll_loom_comm_copy_attr_fn_t;

/* The runtime removes `dir` (recursively) when the job ends, if it can. */
static inline void mca_coll_loom_register_cleanup(char *dir)
{
    if (NULL != opal_pmix.register_cleanup) {
        (void) opal_pmix.register_cleanup(dir, true, false, false);
    }
}

/* Context id: one 32-bit number, the same on every rank of the communicator. */
#define MCA_COLL_LOOM_CID_FORMAT(buf, len, comm) \
    snprintf((buf), (len), "%u", (unsigned) (comm)->c_contextid)

/* 0: the process prints its help messages itself.  4.1 relays a process's help message
 * to mpirun through PMIx's log and the local daemon, and 4.1.4 loses some on the way
 * ("ORTE_ERROR_LOG: Data unpack would read past end of buffer ... show_help.c"; about
 * one run in three of a 5-rank job that shows one message). */
#define MCA_COLL_LOOM_RUNTIME_RELAYS_HELP 0

#elif OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/threads/mutex.h"

#define MCA_COLL_LOOM_COLL_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define MCA_COLL_LOOM_DECLSPEC OMPI_DECLSPEC
#define MCA_COLL_LOOM_PMIX_HOSTNAME PMIX_HOSTNAME
#define MCA_COLL_LOOM_PMIX_STRING PMIX_STRING

#define MCA_COLL_LOOM_NBC_OBJS(req) ((req)->data.refcounted.objs.objs)

#define MCA_COLL_LOOM_PROC_HOSTNAME(proc) ((void) (proc), (char *) NULL)

typedef const char mca_coll_loom_info_str_t;

typedef MPI_Comm_copy_attr_function mca_coll_loom_comm_copy_attr_fn_t;

static inline void mca_coll_loom_register_cleanup(char *dir)
{
    (void) opal_pmix_register_cleanup(dir, true, false, false);
}

/* 1: help messages go to mpirun, which prints each problem once for the whole job. */
#define MCA_COLL_LOOM_RUNTIME_RELAYS_HELP 1

/* Extended context id: (base, sub), unique in the job and the same on every rank.
 * Communicators made the classic way have base 0 and their 32-bit id as sub, so
 * they print as on 4.1. */
#define MCA_COLL_LOOM_CID_FORMAT(buf, len, comm)                                          \
    (0 == (comm)->c_contextid.cid_base                                                    \
         ? snprintf((buf), (len), "%" PRIu64, (comm)->c_contextid.cid_sub.u64)            \
         : snprintf((buf), (len), "0x%" PRIx64 ".%" PRIx64, (comm)->c_contextid.cid_base, \
                    (comm)->c_contextid.cid_sub.u64))

#else
#error "coll/loom builds for Open MPI 4.1.x and 5.0.x only (configure checks this)"
#endif

/* The communicator's context id as text, for messages and the names of its shared
 * segments: mca_coll_loom_cid(comm).s lives until the end of the full expression. */
typedef struct {
    char s[40];
} mca_coll_loom_cid_t;

static inline mca_coll_loom_cid_t mca_coll_loom_cid(const ompi_communicator_t *comm)
{
    mca_coll_loom_cid_t c;
    (void) MCA_COLL_LOOM_CID_FORMAT(c.s, sizeof(c.s), comm);
    return c;
}

#endif /* MCA_COLL_LOOM_COMPAT_H */
