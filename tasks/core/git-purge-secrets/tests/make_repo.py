"""Builds /app/service with a fixed history (dates, authors) in which config/secrets.env and a
large assets/dump.bin were committed. Also used by the hidden tests to rebuild the original."""
import os
import subprocess
import sys

R = sys.argv[1] if len(sys.argv) > 1 else "/app/service"
os.makedirs(R, exist_ok=True)
env = dict(os.environ)
AUTHORS = [("Ada Ops", "ada@example.com"), ("Bo Dev", "bo@example.com")]
step = 0


def git(*a, **kw):
    return subprocess.run(["git", *a], cwd=R, check=True, env=env, capture_output=True, text=True, **kw).stdout


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(os.path.join(R, path)) or R, exist_ok=True)
    with open(os.path.join(R, path), mode) as f:
        f.write(text)


def commit(msg, who=0):
    global step
    step += 1
    name, email = AUTHORS[who]
    env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email,
               GIT_AUTHOR_DATE=f"{1710000000 + step * 5000} +0100", GIT_COMMITTER_DATE=f"{1710000000 + step * 5000} +0100")
    git("add", "-A")
    git("commit", "-q", "-m", msg)


git("init", "-q", "-b", "main")
write("README.md", "# service\n")
write("app.py", "print('service')\n")
commit("Initial commit")
write("config/settings.ini", "[server]\nport = 8080\n")
write("config/secrets.env", "PAYMENT_API_KEY=sk_live_4f9a8b7c6d5e3f2a\n")
write("app.py", "import configparser\nprint('service with config')\n")
commit("Load configuration from config/", 1)
write("app.py", "\ndef health():\n    return 'ok'\n", "a")
commit("Add health check")
with open(os.path.join(R, "assets.tmp"), "wb") as f:
    pass
os.remove(os.path.join(R, "assets.tmp"))
os.makedirs(os.path.join(R, "assets"), exist_ok=True)
with open(os.path.join(R, "assets/dump.bin"), "wb") as f:
    data = bytearray()
    x = 12345
    for _ in range(300_000):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        data.append(x >> 16 & 0xFF)
    f.write(bytes(data))
commit("Add database dump for debugging", 1)
write("config/settings.ini", "[server]\nport = 8080\nworkers = 4\n")
write("app.py", "\ndef workers():\n    return 4\n", "a")
commit("Configure workers and read secrets", 0)
write("README.md", "# service\n\nRun with `python3 app.py`.\n")
commit("Document how to run")
git("tag", "-a", "v1.0", "-m", "Release 1.0")
git("checkout", "-q", "-b", "release/1.x")
write("config/secrets.env", "PAYMENT_API_KEY=sk_live_rotated_77q1w2e3\n")
commit("Rotate payment key", 1)
write("app.py", "\ndef version():\n    return '1.1'\n", "a")
commit("Backport version endpoint", 1)
git("tag", "v1.1")
git("checkout", "-q", "main")
os.remove(os.path.join(R, "assets/dump.bin"))
commit("Remove database dump")
write("lib/util.py", "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n")
commit("Add util.clamp", 1)
env.update(GIT_AUTHOR_DATE=f"{1710000000 + 99 * 5000} +0100", GIT_COMMITTER_DATE=f"{1710000000 + 99 * 5000} +0100")
git("merge", "-q", "--no-ff", "-m", "Merge branch 'release/1.x'", "release/1.x")
step += 1
git("rm", "-q", "--cached", "config/secrets.env")
write(".gitignore", "config/secrets.env\n")
commit("Stop tracking secrets")
write("app.py", "\ndef ready():\n    return True\n", "a")
commit("Add readiness probe", 1)
write("config/secrets.env", "PAYMENT_API_KEY=sk_live_local_dev_key_5k8\n")
