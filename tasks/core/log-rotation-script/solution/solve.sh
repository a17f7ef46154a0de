#!/bin/bash
set -e
cat > /app/rotate.sh <<'SH'
#!/bin/bash
set -euo pipefail
dir=$1; keep=$2
shopt -s nullglob
for log in "$dir"/*.log; do
  [ -f "$log" ] || continue
  [ -s "$log" ] || continue
  # Collect existing generation numbers and shift from the highest down.
  nums=$(for g in "$log".*.gz; do n=${g#"$log".}; n=${n%.gz}; [[ $n =~ ^[0-9]+$ ]] && echo "$n"; done | sort -rn)
  for n in $nums; do
    mv -f "$log.$n.gz" "$log.$((n + 1)).gz"
  done
  for g in "$log".*.gz; do
    n=${g#"$log".}; n=${n%.gz}
    if [[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt "$keep" ]; then rm -f "$g"; fi
  done
  gzip -c "$log" > "$log.1.gz"
  # copytruncate: keep the inode the application holds open.
  : > "$log"
done
SH
chmod +x /app/rotate.sh
