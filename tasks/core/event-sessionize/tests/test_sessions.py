import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

PAGES = ["/home", "/cart", "/checkout", "/help", "/search", "/item/1", "/item/2"]
OFFSETS = [0, 60, -300, 330, -480, 120]


def fmt(ts: datetime, off_min: int) -> str:
    tz = timezone(timedelta(minutes=off_min))
    s = ts.astimezone(tz).isoformat(timespec="seconds")
    return s.replace("+00:00", "Z") if off_min == 0 and random.random() < 0.5 else s


def generate(rng: random.Random, d: str):
    events = []
    base = datetime(2024, 5, 1, 6, 0, tzinfo=timezone.utc)
    for u in range(rng.randint(3, 9)):
        uid = f"user{rng.randint(1, 300)}"
        t = base + timedelta(minutes=rng.randint(0, 600))
        for k in range(rng.randint(1, 25)):
            # Gaps straddle the 30-minute boundary exactly: 30:00 joins, 30:01 splits.
            gap = rng.choice([0, 5, 29 * 60 + 59, 30 * 60, 30 * 60 + 1, 45 * 60, 3 * 3600, 120]) if k else 0
            t = t + timedelta(seconds=gap)
            events.append({"event_id": f"ev-{u}-{k}-{rng.randint(0, 10**6)}", "user_id": uid, "ts": t, "page": rng.choice(PAGES)})
    rng.shuffle(events)
    files = {f"srv{i}.ndjson": [] for i in range(3)}
    for e in events:
        line = json.dumps({"event_id": e["event_id"], "user_id": e["user_id"], "ts": fmt(e["ts"], rng.choice(OFFSETS)), "page": e["page"]})
        for name in rng.sample(sorted(files), rng.choice([1, 1, 1, 2, 3])):
            files[name].append(line)
    junk = ['{"event_id": "x1", "user_id": "ghost", "page": "/home"}', "", "{broken json",
            '{"event_id": "x2", "user_id": "ghost", "ts": "yesterday", "page": "/home"}',
            '["not", "an", "object"]', '{"event_id": "x3", "user_id": "ghost", "ts": "2024-05-01T06:00:00Z"}']
    for j in junk:
        files[rng.choice(sorted(files))].insert(rng.randint(0, 5), j)
    for name, lines in files.items():
        open(os.path.join(d, name), "w").write("\n".join(lines) + "\n")
    # A file with another extension must be ignored.
    open(os.path.join(d, "notes.txt"), "w").write(json.dumps({"event_id": "zz", "user_id": "ghost", "ts": "2024-05-01T06:00:00Z", "page": "/x"}) + "\n")
    return events


def reference(events) -> str:
    by_user = {}
    for e in events:
        by_user.setdefault(e["user_id"], []).append(e)
    lines = ["user_id,session,start,end,events,distinct_pages"]
    for uid in sorted(by_user):
        evs = sorted(by_user[uid], key=lambda e: e["ts"])
        sessions = [[evs[0]]]
        for prev, cur in zip(evs, evs[1:]):
            if cur["ts"] - prev["ts"] > timedelta(minutes=30):
                sessions.append([])
            sessions[-1].append(cur)
        for i, s in enumerate(sessions, 1):
            z = lambda t: t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            lines.append(f"{uid},{i},{z(s[0]['ts'])},{z(s[-1]['ts'])},{len(s)},{len({e['page'] for e in s})}")
    return "\n".join(lines) + "\n"


def main() -> int:
    if not os.access("/app/sessionize", os.X_OK):
        print("FAIL: /app/sessionize missing or not executable")
        return 1
    bad = 0
    for seed in range(5):
        rng = random.Random(seed)
        random.seed(seed)
        d = rc.scratch("events-")
        events = generate(rng, d)
        rc.hand_over(d)
        out = os.path.join(rc.scratch("out-"), "s.csv")
        r = rc.run(["/app/sessionize", d, out], timeout=30)
        want = reference(events)
        try:
            got = rc.read_text(out)
        except OSError:
            got = None
        if r.returncode != 0 or got is None or got.replace("\r\n", "\n") != want:
            bad += 1
            print(f"FAIL seed {seed}: rc={r.returncode} stderr={r.stderr[-300:]}")
            if got is not None:
                gl, wl = got.splitlines(), want.splitlines()
                diff = [(a, b) for a, b in zip(gl, wl) if a != b][:5]
                print(f"  lines got={len(gl)} want={len(wl)} first diffs (got, want): {diff}")
    if bad:
        return 1
    print("PASS: sessions match")
    return 0


sys.exit(main())
