#ifndef FORMAT_H
#define FORMAT_H
#include "stats.h"
void print_summary(const summary_t *s);
#endif
