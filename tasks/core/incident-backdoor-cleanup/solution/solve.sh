#!/bin/bash
set -e
# The preload library must go first: it runs inside every process we start.
rm -f /etc/ld.so.preload /usr/local/lib/libsysd.so
rm -f /etc/profile.d/locale-fix.sh
rm -f /etc/cron.d/php-sess-clean
rm -f /usr/local/lib/.cache/dbus-helper
rmdir /usr/local/lib/.cache 2>/dev/null || true
# uid-0 twin of root: userdel refuses while "root" processes run, so edit the databases directly.
sed -i '/^sysupdate:/d' /etc/passwd /etc/shadow
grep -v 'backup@app-01' /root/.ssh/authorized_keys > /tmp/ak && cat /tmp/ak > /root/.ssh/authorized_keys && rm /tmp/ak
sed -i '/dbus-helper/d' /root/.bashrc
sed -i '/\/etc\/shadow/d' /usr/local/bin/backup.sh
rm -rf /tmp/.sysd
cat > /app/incident_report.json <<'JSON'
{
  "accounts": ["sysupdate"],
  "files_removed": ["/etc/ld.so.preload", "/usr/local/lib/libsysd.so", "/etc/profile.d/locale-fix.sh",
                    "/etc/cron.d/php-sess-clean", "/usr/local/lib/.cache/dbus-helper", "/tmp/.sysd/procs.log"],
  "files_repaired": ["/etc/passwd", "/etc/shadow", "/root/.ssh/authorized_keys", "/root/.bashrc",
                     "/usr/local/bin/backup.sh"]
}
JSON
