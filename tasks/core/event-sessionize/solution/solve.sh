#!/bin/bash
set -e
cat > /app/sessionize <<'PY'
#!/usr/bin/env python3
import glob
import json
import os
import sys
from datetime import datetime, timedelta, timezone

src, out = sys.argv[1], sys.argv[2]
events = {}
for path in sorted(glob.glob(os.path.join(src, "*.ndjson"))):
    for line in open(path, encoding="utf-8"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in ("event_id", "user_id", "page", "ts")):
            continue
        try:
            ts = datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))
        except ValueError:
            continue
        if ts.tzinfo is None:
            continue
        events.setdefault(e["event_id"], (e["user_id"], ts.astimezone(timezone.utc), e["page"]))

by_user = {}
for uid, ts, page in events.values():
    by_user.setdefault(uid, []).append((ts, page))
with open(out, "w") as f:
    f.write("user_id,session,start,end,events,distinct_pages\n")
    for uid in sorted(by_user):
        evs = sorted(by_user[uid])
        sessions = [[evs[0]]]
        for prev, cur in zip(evs, evs[1:]):
            if cur[0] - prev[0] > timedelta(minutes=30):
                sessions.append([])
            sessions[-1].append(cur)
        for i, s in enumerate(sessions, 1):
            z = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(f"{uid},{i},{z(s[0][0])},{z(s[-1][0])},{len(s)},{len({p for _, p in s})}\n")
PY
chmod +x /app/sessionize
