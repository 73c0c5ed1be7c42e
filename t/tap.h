/*
 * tap.h - a small TAP producer for strata's tests, in the manner of
 * c-tap-harness. Under MPI (after tap_use_comm) every ok() is collective:
 * its result is the AND over all ranks and only rank 0 prints, so all ranks
 * must make the same sequence of ok() calls.
 */
#ifndef STRATA_TAP_H
#define STRATA_TAP_H

#include <mpi.h>

void tap_use_comm(MPI_Comm comm);   /* make ok() collective over comm */
int  tap_rank(void);

void plan(int n);
int  ok(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int  is_int(long long got, long long expected, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int  is_double(double got, double expected, double tol, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int  is_string(const char *got, const char *expected, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void skip(int n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bail_out(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Write text into the file root/path, making its folders (a fake /proc
 * or /sys tree for readers that take a root); bails out on failure. */
void tap_put_file(const char *root, const char *path, const char *text);
void skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Exit status for main: 0 when the plan was met and every test passed. */
int  done_testing(void);

#endif
