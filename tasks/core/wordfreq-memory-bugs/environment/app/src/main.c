/* wordfreq: prints the most frequent words of standard input.
 * usage: wordfreq [-n N] [-s STOPWORDS_FILE] < text */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "table.h"

static int read_word(FILE *f, char *buf) {
    int c, len = 0;
    while ((c = fgetc(f)) != EOF && !isalpha(c)) {}
    if (c == EOF) return 0;
    do {
        buf[len++] = (char)tolower(c);
    } while ((c = fgetc(f)) != EOF && isalpha(c));
    buf[len] = '\0';
    return 1;
}

int main(int argc, char **argv) {
    long top = 10;
    const char *stopfile = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "n:s:")) != -1) {
        if (opt == 'n') top = atol(optarg);
        else if (opt == 's') stopfile = optarg;
        else {
            fprintf(stderr, "usage: wordfreq [-n N] [-s STOPWORDS_FILE]\n");
            return 2;
        }
    }
    table_t t;
    table_init(&t);
    char word[64];
    while (read_word(stdin, word)) table_add(&t, word);
    if (stopfile) {
        FILE *f = fopen(stopfile, "r");
        if (!f) {
            perror(stopfile);
            return 1;
        }
        while (read_word(f, word)) table_remove(&t, word);
        fclose(f);
    }
    node_t **sorted = table_sorted(&t);
    for (size_t i = 0; i < t.size && (long)i < top; i++)
        printf("%ld %s\n", sorted[i]->count, sorted[i]->word);
    free(sorted);
    table_free(&t);
    return 0;
}
