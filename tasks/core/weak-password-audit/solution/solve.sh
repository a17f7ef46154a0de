#!/bin/bash
set -e
cat > /app/crack <<'PY'
#!/usr/bin/env python3
import hashlib
import hmac
import sys

words = [w for w in open(sys.argv[2], encoding="utf-8").read().split("\n") if w]
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    user, h = line.split(":")[:2]
    parts = h.split("$")
    if len(parts) != 5 or parts[1] != "pbkdf2-sha256":
        continue
    iters, salt, digest = int(parts[2]), bytes.fromhex(parts[3]), parts[4]
    for w in words:
        if hmac.compare_digest(hashlib.pbkdf2_hmac("sha256", w.encode(), salt, iters).hex(), digest):
            print(f"{user}:{w}")
            break
PY
chmod +x /app/crack
/app/crack /app/audit/users.shadow /app/audit/wordlist.txt
