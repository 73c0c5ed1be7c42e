/*
 * stats.h - the summary statistics the benchmarks report. Medians rather
 * than means: one descheduled repeat on a shared machine should not move
 * the number.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stdlib.h>

/* qsort comparator for doubles, ascending */
static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of v[0..n), n >= 1; sorts v in place */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
