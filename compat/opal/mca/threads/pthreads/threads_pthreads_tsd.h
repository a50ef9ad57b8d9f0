/*
 * loom build compatibility: a stand-in for the pthreads thread-specific-data
 * header of Open MPI 5.0's threads framework (MCA_threads_tsd_base_include_HEADER),
 * which the installed development headers lack; see threads_pthreads_mutex.h here.
 *
 * What it provides: opal_tsd_key_t is a pthread key, with delete/set/get over it.
 */
#ifndef OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_TSD_H
#define OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_TSD_H

#include "opal_config.h"

#include <pthread.h>

#include "opal/constants.h"

BEGIN_C_DECLS

typedef pthread_key_t opal_tsd_key_t;

static inline int opal_tsd_key_delete(opal_tsd_key_t key)
{
    return 0 == pthread_key_delete(key) ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline int opal_tsd_set(opal_tsd_key_t key, void *value)
{
    return 0 == pthread_setspecific(key, value) ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline int opal_tsd_get(opal_tsd_key_t key, void **value)
{
    *value = pthread_getspecific(key);
    return OPAL_SUCCESS;
}

END_C_DECLS

#endif
