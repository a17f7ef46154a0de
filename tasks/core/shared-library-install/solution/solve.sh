#!/bin/bash
set -e
cd /app
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -O2 -Wall
CPPFLAGS = -Iinclude
PREFIX = /usr/local
DESTDIR =
LIBDIR = $(PREFIX)/lib
INCLUDEDIR = $(PREFIX)/include
VERSION = 2.1.0
SOMAJOR = 2
SRCS = src/polygon.c src/util.c
STATIC_OBJS = $(SRCS:.c=.o)
SHARED_OBJS = $(SRCS:.c=.pic.o)
REALNAME = libgeom.so.$(VERSION)
SONAME = libgeom.so.$(SOMAJOR)

.PHONY: all install clean
all: libgeom.a $(REALNAME)

libgeom.a: $(STATIC_OBJS)
	ar rcs $@ $^

# The version script exports the public API and makes every other symbol local.
$(REALNAME): $(SHARED_OBJS) libgeom.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=libgeom.map -o $@ $(SHARED_OBJS) -lm

%.o: %.c include/geom/geom.h src/internal.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

%.pic.o: %.c include/geom/geom.h src/internal.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -c $< -o $@

libgeom.map:
	printf 'GEOM_2 {\n  global: geom_polygon_area; geom_polygon_perimeter; geom_point_in_polygon; geom_version;\n  local: *;\n};\n' > $@

geom.pc:
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: geom\nDescription: Polygon geometry helpers\nVersion: %s\nCflags: -I$${includedir}\nLibs: -L$${libdir} -lgeom\nLibs.private: -lm\n' '$(PREFIX)' '$(VERSION)' > $@

install: all geom.pc
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/geom
	install -m 755 $(REALNAME) $(DESTDIR)$(LIBDIR)/$(REALNAME)
	ln -sf $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libgeom.so
	install -m 644 libgeom.a $(DESTDIR)$(LIBDIR)/libgeom.a
	install -m 644 include/geom/geom.h $(DESTDIR)$(INCLUDEDIR)/geom/geom.h
	install -m 644 geom.pc $(DESTDIR)$(LIBDIR)/pkgconfig/geom.pc

clean:
	rm -f $(STATIC_OBJS) $(SHARED_OBJS) libgeom.a $(REALNAME) libgeom.map geom.pc
MK
make clean
make
