#include <stdlib.h>
#include <string.h>
#include "table.h"

static unsigned long hash(const char *s) {
    unsigned long h = 5381;
    while (*s) h = h * 33 + (unsigned char)*s++;
    return h;
}

void table_init(table_t *t) {
    t->nbuckets = 8;
    t->size = 0;
    t->buckets = calloc(t->nbuckets, sizeof(node_t *));
}

static void grow(table_t *t) {
    size_t nb = t->nbuckets * 2;
    node_t **fresh = calloc(nb, sizeof(node_t *));
    for (size_t i = 0; i < t->nbuckets; i++) {
        for (node_t *n = t->buckets[i]; n; n = n->next) {
            size_t j = hash(n->word) % nb;
            n->next = fresh[j];
            fresh[j] = n;
        }
    }
    free(t->buckets);
    t->buckets = fresh;
    t->nbuckets = nb;
}

void table_add(table_t *t, const char *word) {
    size_t i = hash(word) % t->nbuckets;
    for (node_t *n = t->buckets[i]; n; n = n->next) {
        if (strcmp(n->word, word) == 0) {
            n->count++;
            return;
        }
    }
    node_t *n = malloc(sizeof *n);
    n->word = malloc(strlen(word));
    strcpy(n->word, word);
    n->count = 1;
    n->next = t->buckets[i];
    t->buckets[i] = n;
    if (++t->size > t->nbuckets * 2) grow(t);
}

void table_remove(table_t *t, const char *word) {
    size_t i = hash(word) % t->nbuckets;
    node_t **link = &t->buckets[i];
    for (node_t *n = *link; n; n = n->next) {
        if (strcmp(n->word, word) == 0) {
            *link = n->next;
            free(n->word);
            free(n);
            t->size--;
        }
        link = &n->next;
    }
}

void table_free(table_t *t) {
    for (size_t i = 0; i < t->nbuckets; i++) {
        node_t *n = t->buckets[i];
        while (n) {
            node_t *next = n->next;
            free(n->word);
            free(n);
            n = next;
        }
    }
    free(t->buckets);
}

static int by_count(const void *a, const void *b) {
    const node_t *x = *(node_t *const *)a, *y = *(node_t *const *)b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return strcmp(x->word, y->word);
}

node_t **table_sorted(const table_t *t) {
    node_t **out = malloc(t->size * sizeof(node_t));
    size_t k = 0;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (node_t *n = t->buckets[i]; n; n = n->next) out[k++] = n;
    qsort(out, k, sizeof(node_t *), by_count);
    return out;
}
