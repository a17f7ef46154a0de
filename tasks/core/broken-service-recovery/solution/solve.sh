#!/bin/bash
set -e
# 1. The interpreter path in the control script does not exist on Debian.
sed -i 's|^PYTHON=/usr/bin/python$|PYTHON=/usr/bin/python3|' /opt/invsvc/bin/invsvcctl
# 2. A leftover duplicate [server] section makes configparser refuse the file.
python3 - <<'PY'
import re
p = "/etc/invsvc/invsvc.conf"
s = open(p).read()
s = re.sub(r"\n\[server\]\n# temporary override[^\n]*\nport = 9090\n", "\n", s)
open(p, "w").write(s)
PY
# 3. The service user must be able to write its log and its database (SQLite also needs the dir).
chown -R invsvc:invsvc /var/log/invsvc /var/lib/invsvc
# 4. Apply the pending migration (002) once.
v=$(sqlite3 /var/lib/invsvc/inventory.db 'SELECT max(version) FROM schema_version')
if [ "$v" -lt 2 ]; then
  sqlite3 /var/lib/invsvc/inventory.db < /opt/invsvc/migrations/002_add_location.sql
fi
chown invsvc:invsvc /var/lib/invsvc/inventory.db
# 5. A pid file only counts if it names a live invsvc process; stop removes it; status reports truthfully.
python3 - <<'PY'
p = "/opt/invsvc/bin/invsvcctl"
s = open(p).read()
s = s.replace('''start() {
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then''', '''is_running() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null)
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "invsvc.py"
}

start() {
  if is_running; then''')
s = s.replace('''  mkdir -p "$(dirname "$PIDFILE")"''', '''  rm -f "$PIDFILE"
  mkdir -p "$(dirname "$PIDFILE")"''')
s = s.replace('''stop() {
  if [ -f "$PIDFILE" ]; then
    kill "$(cat "$PIDFILE")" 2>/dev/null
  fi''', '''stop() {
  if is_running; then
    pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"''')
s = s.replace('''status() {
  if [ -f "$PIDFILE" ]; then''', '''status() {
  if is_running; then''')
open(p, "w").write(s)
PY
/opt/invsvc/bin/invsvcctl start
