/*
 * coll/loom: the node of every rank of a communicator, without communication, turned
 * into the core's topology descriptor (opal/loom/loom_topo.h).
 *
 * Hostnames come from what the runtime already holds: the proc structure when the
 * peer has one, the PMIx job data (OPAL_PMIX_HOSTNAME, fetched "optional" so nothing
 * goes over the network) when the group only holds a sentinel for it, as
 * ompi/proc/proc.c does.  Remote peers are not turned into proc structures
 * (ompi_comm_peer_lookup would allocate one for each).  Every rank must derive the
 * same partition, so the key of a node is its hostname string, interned to a number;
 * each process is looked up once per process, not once per communicator.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "opal/class/opal_hash_table.h"
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

    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, MCA_COLL_LOOM_PMIX_HOSTNAME, name, &host,
                                   MCA_COLL_LOOM_PMIX_STRING);
    if (OPAL_SUCCESS != rc) {
        return NULL;
    }
    return host;
}

/* Process-wide: hostnames interned as small numbers (equal names, equal numbers), and
 * the node number of every process looked up so far.  Communicators are created often
 * (dup, split), and a PMIx lookup costs a thread switch: asking again for each peer of
 * each new communicator was a large part of a short-lived communicator's cost
 * (docs/dev/developing.md, "Performance notes").
 * Guarded by the component's lock (communicators may be created by several threads). */
static struct {
    bool ready;
    opal_hash_table_t names;  /* hostname -> key */
    opal_hash_table_t procs;  /* process name -> key + 1 */
    unsigned long next;
    bool have_mine;
    unsigned long mine;
    char **hosts;             /* key -> hostname (the torus map looks nodes up by name) */
    unsigned long nhosts;
} cache;

static int cache_init(void)
{
    int rc;

    if (cache.ready) {
        return OMPI_SUCCESS;
    }
    OBJ_CONSTRUCT(&cache.names, opal_hash_table_t);
    OBJ_CONSTRUCT(&cache.procs, opal_hash_table_t);
    rc = opal_hash_table_init(&cache.names, 64);
    if (OPAL_SUCCESS == rc) {
        rc = opal_hash_table_init(&cache.procs, 256);
    }
    if (OPAL_SUCCESS != rc) {
        OBJ_DESTRUCT(&cache.names);
        OBJ_DESTRUCT(&cache.procs);
        return rc;
    }
    cache.next = 0;
    cache.have_mine = false;
    cache.hosts = NULL;
    cache.nhosts = 0;
    cache.ready = true;
    return OMPI_SUCCESS;
}

void mca_coll_loom_topo_cache_fini(void)
{
    if (cache.ready) {
        OBJ_DESTRUCT(&cache.names);
        OBJ_DESTRUCT(&cache.procs);
        for (unsigned long k = 0; k < cache.nhosts; ++k) {
            free(cache.hosts[k]);
        }
        free(cache.hosts);
        cache.hosts = NULL;
        cache.nhosts = 0;
        cache.ready = false;
    }
}

static int intern(const char *host, unsigned long *key)
{
    void *value;

    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&cache.names, host, strlen(host), &value)) {
        *key = (unsigned long) (uintptr_t) value;
        return OMPI_SUCCESS;
    }
    if (cache.next == cache.nhosts) {
        const unsigned long n = cache.nhosts > 0 ? 2 * cache.nhosts : 16;
        char **h = realloc(cache.hosts, n * sizeof(*h));
        if (NULL == h) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        cache.hosts = h;
        cache.nhosts = n;
        memset(h + cache.next, 0, (n - cache.next) * sizeof(*h));
    }
    cache.hosts[cache.next] = strdup(host);
    if (NULL == cache.hosts[cache.next]) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *key = cache.next++;
    return opal_hash_table_set_value_ptr(&cache.names, host, strlen(host), (void *) (uintptr_t) *key);
}

static uint64_t name_key(const opal_process_name_t *name)
{
    uint64_t k;

    memcpy(&k, name, sizeof(k));
    return k;
}

/* The key of my own node: the same source as my peers use for me, then the local
 * nodename. */
static int my_key(unsigned long *key)
{
    opal_process_name_t my_name = OPAL_PROC_MY_NAME;
    char *my_host;
    int rc;

    if (cache.have_mine) {
        *key = cache.mine;
        return OMPI_SUCCESS;
    }
    my_host = modex_hostname(&my_name);
    if (NULL == my_host && NULL != opal_process_info.nodename) {
        my_host = strdup(opal_process_info.nodename);
    }
    if (NULL == my_host) {
        my_host = strdup("localhost");
    }
    if (NULL == my_host) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = intern(my_host, key);
    free(my_host);
    if (OPAL_SUCCESS == rc) {
        cache.mine = *key;
        cache.have_mine = true;
    }
    return rc;
}

/* The key of a remote peer's node; *found false when its hostname is not known. */
static int peer_key(ompi_proc_t *proc, unsigned long *key, bool *found)
{
    opal_process_name_t name;
    char *host;
    bool owned = false;
    void *value;
    int rc;

    if (ompi_proc_is_sentinel(proc)) {
        name = ompi_proc_sentinel_to_name((uintptr_t) proc);
    } else {
        name = proc->super.proc_name;
    }
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(&cache.procs, name_key(&name), &value)) {
        *key = (unsigned long) (uintptr_t) value - 1;
        *found = true;
        return OMPI_SUCCESS;
    }
    host = ompi_proc_is_sentinel(proc) ? NULL : MCA_COLL_LOOM_PROC_HOSTNAME(proc);
    if (NULL == host) {
        host = modex_hostname(&name);
        owned = true;
    }
    *found = NULL != host;
    if (NULL == host) {
        return OMPI_SUCCESS;
    }
    rc = intern(host, key);
    if (owned) {
        free(host);
    }
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return opal_hash_table_set_value_uint64(&cache.procs, name_key(&name),
                                            (void *) (uintptr_t) (*key + 1));
}

char *mca_coll_loom_comm_node_host(struct ompi_communicator_t *comm, int rank)
{
    ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(comm->c_local_group, rank);
    unsigned long key = 0;
    bool found = true;
    char *host = NULL;
    int rc;

    OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
    rc = cache_init();
    if (OPAL_SUCCESS == rc) {
        if (rank == ompi_comm_rank(comm) ||
            (!ompi_proc_is_sentinel(proc) && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            rc = my_key(&key);
        } else {
            rc = peer_key(proc, &key, &found);
        }
    }
    if (OPAL_SUCCESS == rc && found && key < cache.next) {
        host = strdup(cache.hosts[key]);
    }
    OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    return host;
}

int mca_coll_loom_comm_topo(struct ompi_communicator_t *comm, mca_coll_loom_topo_t *topo)
{
    const int P = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    ompi_group_t *group = comm->c_local_group;
    unsigned long *keys, mine;
    int rc;

    keys = malloc((size_t) P * sizeof(*keys));
    if (NULL == keys) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OPAL_THREAD_LOCK(&mca_coll_loom_component.lock);
    rc = cache_init();
    if (OPAL_SUCCESS == rc) {
        rc = my_key(&mine);
    }
    for (int i = 0; i < P && OPAL_SUCCESS == rc; ++i) {
        ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(group, i);
        bool found = true;

        /* the runtime's locality is authoritative for my own node */
        if (i == me || (!ompi_proc_is_sentinel(proc) &&
                        OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            keys[i] = mine;
            continue;
        }
        rc = peer_key(proc, &keys[i], &found);
        if (!found) {
            /* unknown: a node of its own, the safe guess for a remote peer; the key
             * space of interned names never reaches these values */
            keys[i] = (unsigned long) -1 - (unsigned long) i;
        }
    }
    OPAL_THREAD_UNLOCK(&mca_coll_loom_component.lock);
    if (OPAL_SUCCESS != rc) {
        free(keys);
        return rc;
    }

    rc = (0 == mca_coll_loom_topo_build(topo, P, keys)) ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    free(keys);
    return rc;
}

bool mca_coll_loom_comm_in_job(struct ompi_communicator_t *comm)
{
    const int P = ompi_comm_size(comm);
    ompi_group_t *group = comm->c_local_group;
    /* this process is never a sentinel in its own group */
    const opal_jobid_t mine = ompi_group_get_proc_ptr_raw(group, ompi_comm_rank(comm))->super.proc_name.jobid;

    for (int i = 0; i < P; ++i) {
        ompi_proc_t *proc = ompi_group_get_proc_ptr_raw(group, i);
        opal_process_name_t name = ompi_proc_is_sentinel(proc) ? ompi_proc_sentinel_to_name((uintptr_t) proc)
                                                               : proc->super.proc_name;
        if (name.jobid != mine) {
            return false;
        }
    }
    return true;
}
