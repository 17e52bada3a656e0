/* The C tests' assertion: on failure, print the line and a message to stdout (stderr must
 * stay empty: the tests check that the library never writes to it) and exit 1. */
#ifndef NEON_TEST_CHECK_H
#define NEON_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAILED at line %d: ", __LINE__);                                          \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#endif
