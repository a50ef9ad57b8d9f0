/*
 * loom build compatibility: a stand-in for the pthreads thread header of Open MPI
 * 5.0's threads framework (MCA_threads_base_include_HEADER), which the installed
 * development headers lack; see threads_pthreads_mutex.h here for why.
 *
 * What it provides: opal_thread_yield(), which calls the yield function that
 * libopen-pal's pthreads component chose at startup (a function pointer it exports).
 */
#ifndef OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_THREADS_H
#define OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_THREADS_H

#include "opal_config.h"

#include <pthread.h>

BEGIN_C_DECLS

typedef void(opal_threads_pthreads_yield_fn_t)(void);
OPAL_DECLSPEC extern opal_threads_pthreads_yield_fn_t *opal_threads_pthreads_yield_fn;

#define OPAL_THREAD_YIELD_WHEN_IDLE_DEFAULT false

static inline void opal_thread_yield(void)
{
    opal_threads_pthreads_yield_fn();
}

END_C_DECLS

#endif
