#!/bin/bash
set -e
cat > /app/mdtoc <<'PY'
#!/usr/bin/env python3
import re
import sys

CLOSING = re.compile(r"(?:^|[ \t])#+[ \t]*$")
counts: dict[str, int] = {}
fence = None
for line in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    if fence:
        body = line.rstrip(" ")
        if len(body) >= fence[1] and body == fence[0] * len(body):
            fence = None
        continue
    m = re.match(r"(`{3,}|~{3,})", line)
    if m:
        fence = (m.group(1)[0], len(m.group(1)))
        continue
    m = re.match(r"(#{1,6}) (.*)$", line)
    if not m:
        continue
    text = CLOSING.sub("", m.group(2)).strip()
    if not text:
        continue
    base = "".join(c for c in text.lower() if c.isalnum() or c in " -_").replace(" ", "-")
    n = counts.get(base, 0)
    counts[base] = n + 1
    level = len(m.group(1))
    if 2 <= level <= 4:
        print("  " * (level - 2) + f"- [{text}](#{base if n == 0 else f'{base}-{n}'})")
PY
chmod +x /app/mdtoc
