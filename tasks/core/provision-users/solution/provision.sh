#!/bin/bash
# Reconciles accounts with /app/{groups.csv,users.csv,remove.txt}; safe to rerun.
set -euo pipefail

tail -n +2 /app/groups.csv | while IFS=, read -r group gid shared; do
  [ -z "$group" ] && continue
  if getent group "$group" >/dev/null; then
    [ "$(getent group "$group" | cut -d: -f3)" = "$gid" ] || groupmod -g "$gid" "$group"
  else
    groupadd -g "$gid" "$group"
  fi
  if [ "$shared" = yes ]; then
    mkdir -p "/srv/projects/$group"
    chown "root:$group" "/srv/projects/$group"
    chmod 2770 "/srv/projects/$group"
  fi
done

tail -n +2 /app/users.csv | while IFS=, read -r user uid full primary groups shell status password; do
  [ -z "$user" ] && continue
  groups=${groups//;/,}
  if id "$user" >/dev/null 2>&1; then
    usermod -u "$uid" -g "$primary" -c "$full" -s "$shell" -d "/home/$user" -G "$groups" "$user"
  else
    useradd -u "$uid" -g "$primary" -c "$full" -s "$shell" -d "/home/$user" -G "$groups" "$user"
  fi
  mkdir -p "/home/$user"
  chown "$user:$primary" "/home/$user"
  chmod 0750 "/home/$user"
  if [ "$status" = active ]; then
    echo "$user:$password" | chpasswd
    usermod -U "$user" 2>/dev/null || true
  else
    # usermod -L needs a password field to prefix; '!' alone already reads as locked.
    passwd -l "$user" >/dev/null
  fi
done

while read -r user; do
  [ -z "$user" ] && continue
  if id "$user" >/dev/null 2>&1; then
    userdel -r "$user" 2>/dev/null || userdel "$user"
  fi
  rm -rf "/home/$user"
done < /app/remove.txt
