#!/bin/bash
# Installs invsvc in the state the incident left it in.
set -e
useradd --system --no-create-home --shell /usr/sbin/nologin invsvc
mkdir -p /etc/invsvc /var/lib/invsvc /var/log/invsvc /run/invsvc
mv /tmp/invsvc.conf /etc/invsvc/invsvc.conf
sqlite3 /var/lib/invsvc/inventory.db < /opt/invsvc/migrations/001_init.sql
sqlite3 /var/lib/invsvc/inventory.db <<'SQL'
INSERT INTO items VALUES ('SKU-1001', 'hex bolt M6', 500);
INSERT INTO items VALUES ('SKU-1002', 'washer 6mm', 1200);
INSERT INTO items VALUES ('SKU-2040', 'hinge steel', 75);
INSERT INTO items VALUES ('SKU-3310', 'cable tie 200mm', 3000);
INSERT INTO items VALUES ('SKU-4707', 'wall plug 8mm', 640);
SQL
chown -R root:root /var/lib/invsvc /var/log/invsvc
chmod 755 /var/lib/invsvc /var/log/invsvc
chmod 644 /var/lib/invsvc/inventory.db
# Left behind by the crash: names a pid that is alive in every container (pid 1).
echo 1 > /run/invsvc/invsvc.pid
