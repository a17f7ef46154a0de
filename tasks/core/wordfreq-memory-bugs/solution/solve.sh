#!/bin/bash
# Fixes: unbounded word buffer, off-by-one string allocation, rehash walking a relinked list,
# use-after-free while removing stop words.
set -e
cd /app
python3 - <<'PY'
import re
m = open("src/main.c").read()
m = m.replace('''static int read_word(FILE *f, char *buf) {
    int c, len = 0;
    while ((c = fgetc(f)) != EOF && !isalpha(c)) {}
    if (c == EOF) return 0;
    do {
        buf[len++] = (char)tolower(c);
    } while ((c = fgetc(f)) != EOF && isalpha(c));
    buf[len] = '\\0';
    return 1;
}''', '''static int read_word(FILE *f, char **buf, size_t *cap) {
    int c;
    size_t len = 0;
    while ((c = fgetc(f)) != EOF && !isalpha(c)) {}
    if (c == EOF) return 0;
    do {
        if (len + 1 >= *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *buf = realloc(*buf, *cap);
        }
        (*buf)[len++] = (char)tolower(c);
    } while ((c = fgetc(f)) != EOF && isalpha(c));
    (*buf)[len] = '\\0';
    return 1;
}''')
m = m.replace("char word[64];", "char *word = NULL;\n    size_t cap = 0;")
m = m.replace("read_word(stdin, word)", "read_word(stdin, &word, &cap)")
m = m.replace("read_word(f, word)", "read_word(f, &word, &cap)")
m = m.replace("    free(sorted);", "    free(sorted);\n    free(word);")
open("src/main.c", "w").write(m)
t = open("src/table.c").read()
t = t.replace('''        for (node_t *n = t->buckets[i]; n; n = n->next) {
            size_t j = hash(n->word) % nb;''', '''        node_t *next;
        for (node_t *n = t->buckets[i]; n; n = next) {
            next = n->next;
            size_t j = hash(n->word) % nb;''')
t = t.replace("malloc(strlen(word));", "malloc(strlen(word) + 1);")
t = t.replace('''    for (node_t *n = *link; n; n = n->next) {
        if (strcmp(n->word, word) == 0) {
            *link = n->next;
            free(n->word);
            free(n);
            t->size--;
        }
        link = &n->next;
    }''', '''    for (node_t *n = *link; n; n = *link) {
        if (strcmp(n->word, word) == 0) {
            *link = n->next;
            free(n->word);
            free(n);
            t->size--;
            return;
        }
        link = &n->next;
    }''')
open("src/table.c", "w").write(t)
PY
make -B
