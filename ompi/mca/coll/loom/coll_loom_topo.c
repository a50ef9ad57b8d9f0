/*
 * coll/loom: the node of every rank of a communicator, without communication, turned
 * into the core's topology descriptor (opal/loom/loom_topo.h).
 *
 * Hostnames come from what the runtime already holds: the proc structure when the
 * peer has one, the PMIx job data (OPAL_PMIX_HOSTNAME, fetched "optional" so nothing
 * goes over the network) when the group only holds a sentinel for it, as
 * ompi/proc/proc.c does.  Remote peers are not turned into proc structures
 * (ompi_comm_peer_lookup would allocate one for each).  Every rank must derive the
 * same partition, so the key of a node is its hostname string, interned to a number.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/class/opal_hash_table.h"
#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"

#include "coll_loom.h"

/* Hostname of the process called `name` from the PMIx job data, or NULL.  The
 * string is the caller's to free. */
static char *modex_hostname(const opal_process_name_t *name)
{
    char *host = NULL;
    int rc;

    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_HOSTNAME, name, &host, OPAL_STRING);
    if (OPAL_SUCCESS != rc) {
        return NULL;
    }
    return host;
}

/* Interns `host` (NUL-terminated) as a small number: equal names, equal numbers. */
static int intern(opal_hash_table_t *names, const char *host, unsigned long *next,
                  unsigned long *key)
{
    void *value;

    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(names, host, strlen(host), &value)) {
        *key = (unsigned long) (uintptr_t) value;
        return OMPI_SUCCESS;
    }
    *key = (*next)++;
    return opal_hash_table_set_value_ptr(names, host, strlen(host), (void *) (uintptr_t) *key);
}

int mca_coll_loom_comm_topo(struct ompi_communicator_t *comm, mca_coll_loom_topo_t *topo)
{
    const int P = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    ompi_group_t *group = comm->c_local_group;
    opal_hash_table_t names;
    opal_process_name_t my_name;
    unsigned long *keys, next = 0, my_key;
    char *my_host;
    int rc = OMPI_SUCCESS;

    keys = malloc((size_t) P * sizeof(*keys));
    if (NULL == keys) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OBJ_CONSTRUCT(&names, opal_hash_table_t);
    rc = opal_hash_table_init(&names, 64);
    if (OPAL_SUCCESS != rc) {
        goto out;
    }

    /* my own node: the same source as my peers use for me, then the local nodename */
    my_name = OPAL_PROC_MY_NAME;
    my_host = modex_hostname(&my_name);
    if (NULL == my_host && NULL != opal_process_info.nodename) {
        my_host = strdup(opal_process_info.nodename);
    }
    if (NULL == my_host) {
        my_host = strdup("localhost");
    }
    if (NULL == my_host) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    rc = intern(&names, my_host, &next, &my_key);
    free(my_host);
    if (OPAL_SUCCESS != rc) {
        goto out;
    }

    for (int i = 0; i < P; ++i) {
        ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(group, i);
        char *host = NULL;
        bool owned = false;

        if (i == me) {
            keys[i] = my_key;
            continue;
        }
        if (ompi_proc_is_sentinel(proc)) {
            opal_process_name_t name = ompi_proc_sentinel_to_name((uintptr_t) proc);
            host = modex_hostname(&name);
            owned = true;
        } else if (OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            /* the runtime's locality is authoritative for my own node */
            keys[i] = my_key;
            continue;
        } else if (NULL != proc->super.proc_hostname) {
            host = proc->super.proc_hostname;
        } else {
            host = modex_hostname(&proc->super.proc_name);
            owned = true;
        }

        if (NULL == host) {
            /* unknown: a node of its own, the safe guess for a remote peer; the key
             * space of interned names never reaches these values */
            keys[i] = (unsigned long) -1 - (unsigned long) i;
            continue;
        }
        rc = intern(&names, host, &next, &keys[i]);
        if (owned) {
            free(host);
        }
        if (OPAL_SUCCESS != rc) {
            goto out;
        }
    }

    rc = (0 == mca_coll_loom_topo_build(topo, P, keys)) ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;

out:
    OBJ_DESTRUCT(&names);
    free(keys);
    return rc;
}
