#include <stdio.h>
#include "format.h"

void print_summary(const summary_t *s) {
    printf("n=%zu\n", s->n);
    printf("mean=%.*f\n", STATS_PRECISION, s->mean);
    printf("stddev=%.*f\n", STATS_PRECISION, s->stddev);
    printf("min=%.*f\n", STATS_PRECISION, s->min);
    printf("max=%.*f\n", STATS_PRECISION, s->max);
}
