#include <math.h>
#include "stats.h"

summary_t summarize(const double *xs, size_t n) {
    summary_t s = {n, 0.0, 0.0, 0.0, 0.0};
    if (n == 0) return s;
    double mean = 0.0, m2 = 0.0;
    s.min = s.max = xs[0];
    for (size_t i = 0; i < n; i++) {
        double d = xs[i] - mean;
        mean += d / (double)(i + 1);
        m2 += d * (xs[i] - mean);
        if (xs[i] < s.min) s.min = xs[i];
        if (xs[i] > s.max) s.max = xs[i];
    }
    s.mean = mean;
    s.stddev = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0.0;
    return s;
}
