#include <stdio.h>
#include <stdlib.h>
#include "stats.h"
#include "format.h"

int main(void) {
    size_t cap = 1024, n = 0;
    double *xs = malloc(cap * sizeof *xs);
    double x;
    while (scanf("%lf", &x) == 1) {
        if (n == cap) xs = realloc(xs, (cap *= 2) * sizeof *xs);
        xs[n++] = x;
    }
    summary_t s = summarize(xs, n);
    print_summary(&s);
    free(xs);
    return 0;
}
