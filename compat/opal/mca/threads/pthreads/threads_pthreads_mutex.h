/*
 * loom build compatibility: a stand-in for the pthreads mutex header of Open
 * MPI 5.0's threads framework.
 *
 * Why: 5.0's opal_config.h names the header of the threads component it was built
 * with (MCA_threads_mutex_base_include_HEADER) and opal/mca/threads/mutex.h
 * includes it, but `make install` with devel headers does not install component
 * headers, so Debian 13's libopenmpi-dev lacks it.  Like every file under compat/,
 * it is searched with -idirafter, after Open MPI's own directories: an installation
 * that has the real header uses it.
 *
 * What it provides: the interface mutex.h and condition.h expect from the pthreads
 * component: opal_thread_internal_mutex_t and _cond_t are the pthread types (that
 * is the whole ABI: they are members of opal_mutex_t and opal_condition_t), with
 * init/lock/trylock/unlock/destroy and wait/signal/broadcast/destroy over them.
 */
#ifndef OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_MUTEX_H
#define OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_MUTEX_H

#include "opal_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "opal/class/opal_object.h" /* mutex.h relies on it */
#include "opal/constants.h"

BEGIN_C_DECLS

typedef pthread_mutex_t opal_thread_internal_mutex_t;
typedef pthread_cond_t opal_thread_internal_cond_t;

#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER
#if defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP)
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#elif defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER)
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER
#endif

static inline int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *mutex,
                                                  bool recursive)
{
    pthread_mutexattr_t attr;
    int err;

    if (!recursive) {
        return 0 == pthread_mutex_init(mutex, NULL) ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
    }
    if (0 != pthread_mutexattr_init(&attr)) {
        return OPAL_ERR_IN_ERRNO;
    }
    err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    if (0 == err) {
        err = pthread_mutex_init(mutex, &attr);
    }
    (void) pthread_mutexattr_destroy(&attr);
    return 0 == err ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *mutex)
{
    (void) pthread_mutex_lock(mutex);
}

/* 0 when the lock was taken, 1 when it is held elsewhere. */
static inline int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *mutex)
{
    return 0 == pthread_mutex_trylock(mutex) ? 0 : 1;
}

static inline void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *mutex)
{
    (void) pthread_mutex_unlock(mutex);
}

static inline void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *mutex)
{
    (void) pthread_mutex_destroy(mutex);
}

static inline int opal_thread_internal_cond_init(opal_thread_internal_cond_t *cond)
{
    return 0 == pthread_cond_init(cond, NULL) ? OPAL_SUCCESS : OPAL_ERR_IN_ERRNO;
}

static inline void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *cond,
                                                  opal_thread_internal_mutex_t *mutex)
{
    (void) pthread_cond_wait(cond, mutex);
}

static inline void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *cond)
{
    (void) pthread_cond_broadcast(cond);
}

static inline void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *cond)
{
    (void) pthread_cond_signal(cond);
}

static inline void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *cond)
{
    (void) pthread_cond_destroy(cond);
}

END_C_DECLS

#endif
