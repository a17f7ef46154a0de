import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# invsvcctl is a root control script (it starts the service as the invsvc user and writes
# /run/invsvc): it runs in rsr_check's reduced mode, its service left running between calls.
# The checker judges through HTTP, /proc and its own reads; see rsr_check.py for what reduced
# mode leaves open.
rc.lockdown()

CTL = "/opt/invsvc/bin/invsvcctl"
BASE = "http://127.0.0.1:8080"
EXPECTED = {
    "SKU-1001": ("hex bolt M6", 500, "A-10"),
    "SKU-1002": ("washer 6mm", 1200, "A-10"),
    "SKU-2040": ("hinge steel", 75, "A-20"),
    "SKU-3310": ("cable tie 200mm", 3000, "A-33"),
    "SKU-4707": ("wall plug 8mm", 640, "A-47"),
}
results: dict[str, int] = {}
notes: list[str] = []


def ctl(arg: str) -> int:
    # rc.run captures through files, not pipes: a daemon that inherits a pipe would block us.
    try:
        r = rc.run([CTL, arg], root=True, keep_children=True, timeout=20,
                   env={"HOME": "/root", "USER": "root", "LOGNAME": "root"})
        code, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        code, out = -1, ""
    notes.append(f"invsvcctl {arg} -> {code}: {out.strip()[:200]}")
    return code


def port_open() -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", 8080)) == 0


def wait(cond, secs: float) -> bool:
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.2)
    return cond()


def http(method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"null")
        except ValueError:
            return e.code, None
    except (OSError, ValueError) as e:
        return -1, str(e)


def invsvc_pids() -> list[int]:
    pids = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            cmd = open(p, "rb").read()
        except OSError:
            continue
        pid = int(p.split("/")[2])
        if b"invsvc.py" in cmd and pid != os.getpid():
            pids.append(pid)
    return pids


def uid_of(pid: int) -> int | None:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def cleanup() -> None:
    if os.access(CTL, os.X_OK):
        ctl("stop")
    for pid in invsvc_pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    wait(lambda: not port_open() and not invsvc_pids(), 10)
    for f in glob.glob("/run/invsvc/*.pid"):
        os.remove(f)


def main() -> None:
    cleanup()
    ctl("start")
    up = wait(port_open, 15)
    pids = invsvc_pids()
    uids = [uid_of(p) for p in pids]
    try:
        invsvc_uid = int(subprocess.run(["id", "-u", "invsvc"], capture_output=True, text=True).stdout)
    except ValueError:
        invsvc_uid = -1
    results["service_starts"] = int(up and bool(pids) and all(u == invsvc_uid for u in uids))
    notes.append(f"listening={up} pids={pids} uids={uids}")
    if not up:
        # Nothing else can be checked without a running service; the finally block records zeros.
        cleanup()
        return

    code, body = http("GET", "/health") if up else (-1, None)
    results["health_ok"] = int(code == 200 and body == {"status": "ok"})
    notes.append(f"/health -> {code} {body}")

    ok = up
    for sku, (name, qty, loc) in EXPECTED.items():
        code, body = http("GET", f"/items/{sku}") if up else (-1, None)
        if code != 200 or body != {"sku": sku, "name": name, "qty": qty, "location": loc}:
            ok = False
            notes.append(f"/items/{sku} -> {code} {body}")
    results["schema_migrated"] = int(ok)

    new = {"sku": "SKU-9931", "name": "spring clip", "qty": 42, "location": "B-07"}
    code, body = http("POST", "/items", new) if up else (-1, None)
    created = code == 201
    notes.append(f"POST /items -> {code} {body}")

    status_running = ctl("status") if up else -1
    ctl("stop")
    stopped = wait(lambda: not port_open(), 10)
    status_stopped = ctl("status")
    ctl("start")
    restarted = wait(port_open, 15)
    health2 = http("GET", "/health")[0] if restarted else -1
    results["ctl_lifecycle"] = int(up and status_running == 0 and stopped and status_stopped == 3
                                   and restarted and health2 == 200)
    notes.append(f"status(running)={status_running} stopped={stopped} status(stopped)={status_stopped} "
                 f"restarted={restarted} health={health2}")

    code, body = http("GET", "/items/SKU-9931") if restarted else (-1, None)
    results["writes_persist"] = int(created and code == 200 and body == new)
    notes.append(f"after restart /items/SKU-9931 -> {code} {body}")

    # Unclean shutdown: kill the service hard, leave pid files naming live unrelated processes.
    for pid in invsvc_pids():
        os.kill(pid, signal.SIGKILL)
    wait(lambda: not port_open(), 10)
    decoy = subprocess.Popen(["sleep", "300"])
    os.makedirs("/run/invsvc", exist_ok=True)
    stale_ok = True
    for stale in ("1", str(decoy.pid)):
        for f in set(glob.glob("/run/invsvc/*.pid")) | {"/run/invsvc/invsvc.pid"}:
            with open(f, "w") as fh:
                fh.write(stale + "\n")
        ctl("start")
        came_up = wait(port_open, 15) and http("GET", "/health")[0] == 200
        notes.append(f"start with stale pid {stale}: up={came_up}")
        stale_ok = stale_ok and came_up and decoy.poll() is None
        for pid in invsvc_pids():
            os.kill(pid, signal.SIGKILL)
        wait(lambda: not port_open(), 10)
    results["stale_pid_handled"] = int(stale_ok)
    decoy.kill()
    cleanup()


try:
    main()
finally:
    for m in ("service_starts", "health_ok", "schema_migrated", "writes_persist", "ctl_lifecycle", "stale_pid_handled"):
        results.setdefault(m, 0)
    reward = int(all(results.values()))
    print("\n".join(notes))
    print(json.dumps(results))
    rc.write_reward(reward, results)
    sys.exit(0 if reward else 1)
