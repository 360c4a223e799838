/*
 * cktest.h - what every ckube unit test includes first: cmocka with the
 * system headers it needs before it, in the order it needs them.
 */
#ifndef CKUBE_CKTEST_H
#define CKUBE_CKTEST_H

/* cmocka requires these three before cmocka.h, in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#endif /* CKUBE_CKTEST_H */
