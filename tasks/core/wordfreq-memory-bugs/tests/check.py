"""Rebuilds wordfreq from the agent's sources with ASan/UBSan and compares it with a Python model
of the README on generated documents (long words, many distinct words, stop words)."""
import collections
import os
import random
import re
import shutil
import subprocess
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# The agent's sources are compiled as nobody too: a compiler run as root would read any file an
# #include or .incbin names.
rc.lockdown()
rc.expose("/app")
fails = []
B = rc.scratch("wf-")
r = rc.run(["sh", "-c", f"gcc -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -o {B}/wordfreq "
            "/app/src/*.c"], timeout=300)
if r.returncode != 0:
    print("FAIL: sanitizer build failed", r.stderr[-2000:])
    sys.exit(1)
# The agent's Makefile still builds wordfreq (in a copy of /app that nobody may write).
COPY = os.path.join(rc.scratch("app-"), "app")
shutil.copytree("/app", COPY, symlinks=True)
rc.hand_over(COPY)
r = rc.run(["make", "-B", "-C", COPY], timeout=300)
if r.returncode != 0 or not os.access(f"{COPY}/wordfreq", os.X_OK):
    fails.append("make in /app no longer builds /app/wordfreq")

rng = random.Random(1234)
SYL = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "qu"]


def word():
    w = "".join(rng.choice(SYL) for _ in range(rng.randint(1, 4)))
    if rng.random() < 0.02:
        w = "x" * rng.randint(60, 700) + w
    return "".join(c.upper() if rng.random() < 0.1 else c for c in w)


def expected(text, stop, n):
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", text)]
    stops = {w.lower() for w in re.findall(r"[A-Za-z]+", stop)} if stop is not None else set()
    c = collections.Counter(w for w in words if w not in stops)
    items = sorted(c.items(), key=lambda kv: (-kv[1], kv[0].encode()))
    return "".join(f"{v} {k}\n" for k, v in items[: max(n, 0)])


env = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS": "halt_on_error=1"}
# LeakSanitizer stops the process's threads with ptrace (task.toml's `allow_ptrace` lets it
# through rsr's strict seccomp profile). A verifier that refuses ptrace makes it fail on every
# run: then leaks cannot be checked here, said in the output; the other sanitizers still run.
leak = rc.put(f"{B}/leak.c", "#include <stdlib.h>\nint main(void){ return malloc(7) == 0; }\n")
rc.run(["gcc", "-fsanitize=address", "-o", f"{B}/leak", leak], timeout=120)
probe = rc.run([f"{B}/leak"], timeout=60, env=env)
if "LeakSanitizer has encountered a fatal error" in probe.stderr or "does not work under ptrace" in probe.stderr:
    print("NOTE: LeakSanitizer cannot run in this verifier (ptrace refused): leaks are not checked")
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
for case in range(14):
    vocab = [word() for _ in range(rng.choice([5, 50, 400, 3000]))]
    seps = [" ", "  ", "\n", ", ", "-", "'", "3", "\t", ". "]
    text = "".join(rng.choice(vocab) + rng.choice(seps) for _ in range(rng.randint(50, 20000)))
    stop = None
    args = [f"{B}/wordfreq"]
    n = rng.choice([0, 1, 5, 10, 40, 100000])
    if n != 10 or rng.random() < 0.5:
        args += ["-n", str(n)]
    if rng.random() < 0.7:
        stop = " ".join(rng.sample(vocab, min(len(vocab), rng.randint(1, 300))) + ["notinthetext", "Zz"])
        rc.put(f"{B}/stop{case}.txt", stop)
        args += ["-s", f"{B}/stop{case}.txt"]
    try:
        p = rc.run(args, input=text, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        fails.append(f"case {case}: timed out")
        continue
    exp = expected(text, stop, n)
    if p.returncode != 0 or "ERROR" in p.stderr or "runtime error" in p.stderr:
        fails.append(f"case {case}: exit {p.returncode}, stderr: {p.stderr[:600]}")
    elif p.stdout != exp:
        fails.append(f"case {case}: output differs (first lines got {p.stdout[:120]!r}, expected {exp[:120]!r})")
for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
