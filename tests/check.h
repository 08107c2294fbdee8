/* Assertions for hot loops.
 *
 * Criterion reports every assertion, passed ones included, to its runner process,
 * which costs tens of microseconds each; a loop over a hundred thousand random
 * cases would spend its time there. CHECK evaluates the condition once and only
 * calls cr_assert (with the message) when it fails. */
#ifndef TDM_TESTS_CHECK_H
#define TDM_TESTS_CHECK_H

#include <criterion/criterion.h>

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        if (!(cond)) cr_assert(0, __VA_ARGS__);                                                                   \
    } while (0)

#endif
