#ifndef STATS_H
#define STATS_H
#include <stddef.h>

#define STATS_PRECISION 3

typedef struct {
    size_t n;
    double mean;
    double stddev;
    double min;
    double max;
} summary_t;

summary_t summarize(const double *xs, size_t n);
#endif
