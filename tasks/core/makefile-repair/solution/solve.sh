#!/bin/bash
set -e
cd /app
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -O2 -Wall -Iinclude
CPPFLAGS = -MMD -MP
LDLIBS = -lm
PREFIX ?= /usr/local

SRC = $(wildcard src/*.c)
OBJ = $(patsubst src/%.c,build/%.o,$(SRC))

.PHONY: all clean install
all: bin/stats

bin/stats: $(OBJ) | bin
	$(CC) $(CFLAGS) -o $@ $(OBJ) $(LDLIBS)

build/%.o: src/%.c | build
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

bin build:
	mkdir -p $@

install: bin/stats
	mkdir -p $(PREFIX)/bin
	cp bin/stats $(PREFIX)/bin/stats

clean:
	rm -rf bin build

-include $(OBJ:.o=.d)
MK
make
