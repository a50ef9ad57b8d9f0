/*
 * loom build compatibility: a stand-in for the header of Open MPI 5.0's linux
 * timer component (MCA_timer_IMPLEMENTATION_HEADER), which the installed
 * development headers lack; see ../../threads/pthreads/threads_pthreads_mutex.h.
 *
 * What it provides: the timer functions libopen-pal exports (two function
 * pointers the component sets at startup and the clock frequency) and the
 * capability macros opal/mca/timer/timer.h expects.
 */
#ifndef OPAL_MCA_TIMER_LINUX_TIMER_LINUX_H
#define OPAL_MCA_TIMER_LINUX_TIMER_LINUX_H

#include "opal_config.h"

#include "opal/sys/timer.h"

BEGIN_C_DECLS

OPAL_DECLSPEC extern opal_timer_t (*opal_timer_base_get_cycles)(void);
OPAL_DECLSPEC extern opal_timer_t (*opal_timer_base_get_usec)(void);
OPAL_DECLSPEC extern opal_timer_t opal_timer_base_get_freq(void);

#define OPAL_TIMER_CYCLE_NATIVE OPAL_HAVE_SYS_TIMER_GET_CYCLES
#define OPAL_TIMER_CYCLE_SUPPORTED OPAL_HAVE_SYS_TIMER_GET_CYCLES
#define OPAL_TIMER_USEC_NATIVE OPAL_HAVE_SYS_TIMER_GET_CYCLES
#define OPAL_TIMER_USEC_SUPPORTED OPAL_HAVE_SYS_TIMER_GET_CYCLES

END_C_DECLS

#endif
