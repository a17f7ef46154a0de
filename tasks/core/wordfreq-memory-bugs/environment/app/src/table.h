#ifndef TABLE_H
#define TABLE_H
#include <stddef.h>

typedef struct node {
    char *word;
    long count;
    struct node *next;
} node_t;

typedef struct {
    node_t **buckets;
    size_t nbuckets;
    size_t size;
} table_t;

void table_init(table_t *t);
void table_add(table_t *t, const char *word);
void table_remove(table_t *t, const char *word);
void table_free(table_t *t);
/* Returns a malloc'ed array of the table's nodes, sorted by count desc, then word asc. */
node_t **table_sorted(const table_t *t);
#endif
