#!/bin/bash
set -e
cd /app
python3 - <<'PY'
src = open("dedupe.py").read()
src = src.replace("seen = []", "seen = set()")
src = src.replace("seen.append(key)", "seen.add(key)")
src = src.replace("kept = kept + [row]", "kept.append(row)")
open("dedupe.py", "w").write(src)
PY
