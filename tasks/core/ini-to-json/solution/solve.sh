#!/bin/bash
set -e
cat > /app/ini2json <<'PY'
#!/usr/bin/env python3
import json
import re
import sys


def convert(v: str):
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return v[1:-1]
    if re.fullmatch(r"-?[0-9]+", v):
        return int(v)
    if v.lower() in ("true", "yes", "on"):
        return True
    if v.lower() in ("false", "no", "off"):
        return False
    return v


data: dict[str, dict] = {}
section = "global"
for raw in open(sys.argv[1], encoding="utf-8"):
    line = raw.strip()
    if not line or line[0] in ";#":
        continue
    if line.startswith("[") and line.endswith("]"):
        section = line[1:-1].strip()
        data.setdefault(section, {})
        continue
    cuts = [i for i in (line.find("="), line.find(":")) if i >= 0]
    if not cuts:
        continue
    i = min(cuts)
    data.setdefault(section, {})[line[:i].strip()] = convert(line[i + 1:].strip())
print(json.dumps(data, indent=2))
PY
chmod +x /app/ini2json
