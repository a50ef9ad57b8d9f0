/*
 * CHECK() for the unit tests: counts every check and every failure, prints the first
 * 100 failures with file and line, and goes on (a test reports all it can find).
 */
#ifndef LOOM_UNIT_CHECK_H
#define LOOM_UNIT_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        ++checks;                                                                                \
        if (!(cond)) {                                                                           \
            if (failures++ < 100) {                                                              \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                             \
                fprintf(stderr, __VA_ARGS__);                                                    \
                fputc('\n', stderr);                                                             \
            }                                                                                    \
        }                                                                                        \
    } while (0)

#endif /* LOOM_UNIT_CHECK_H */
