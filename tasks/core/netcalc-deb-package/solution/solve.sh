#!/bin/bash
set -e
SRC=/app/netcalc-1.4.2
cd "$SRC"
# Make the build relocatable: PREFIX/SYSCONFDIR choose run-time paths, DESTDIR stages installs.
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -O2 -g -Wall
PREFIX = /usr/local
SYSCONFDIR = $(PREFIX)/etc
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
DESTDIR =

netcalc: netcalc.c
	$(CC) $(CFLAGS) -DSYSCONFDIR='"$(SYSCONFDIR)"' -o netcalc netcalc.c

install: netcalc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(SYSCONFDIR)
	install -m 755 netcalc $(DESTDIR)$(BINDIR)/netcalc
	install -m 644 netcalc.1 $(DESTDIR)$(MANDIR)/man1/netcalc.1
	install -m 644 netcalc.conf $(DESTDIR)$(SYSCONFDIR)/netcalc.conf

clean:
	rm -f netcalc
.PHONY: install clean
MK
make clean
make PREFIX=/usr SYSCONFDIR=/etc
STAGE=$(mktemp -d)/netcalc
umask 022
make install PREFIX=/usr SYSCONFDIR=/etc DESTDIR="$STAGE"
strip --strip-unneeded "$STAGE/usr/bin/netcalc"
gzip -9n "$STAGE/usr/share/man/man1/netcalc.1"
install -d "$STAGE/usr/share/doc/netcalc"
install -m 644 COPYING "$STAGE/usr/share/doc/netcalc/copyright"
gzip -9n -c NEWS > "$STAGE/usr/share/doc/netcalc/changelog.gz"
chmod 644 "$STAGE/usr/share/doc/netcalc/changelog.gz"
install -d "$STAGE/DEBIAN"
echo /etc/netcalc.conf > "$STAGE/DEBIAN/conffiles"
(cd "$STAGE" && find usr -type f -print0 | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
size=$(du -k -s --apparent-size --exclude=DEBIAN "$STAGE" | cut -f1)
cat > "$STAGE/DEBIAN/control" <<CTL
Package: netcalc
Version: 1.4.2-1
Architecture: amd64
Maintainer: Net Calc Team <netcalc@example.org>
Installed-Size: $size
Depends: libc6
Section: net
Priority: optional
Description: IPv4 subnet calculator
 netcalc prints the network, netmask, broadcast address, usable host range
 and host count of IPv4 networks given in CIDR notation.
CTL
chmod 644 "$STAGE"/DEBIAN/*
find "$STAGE" -type d -exec chmod 755 {} +
mkdir -p /app/dist
dpkg-deb --root-owner-group -Zxz --build "$STAGE" /app/dist/netcalc_1.4.2-1_amd64.deb
