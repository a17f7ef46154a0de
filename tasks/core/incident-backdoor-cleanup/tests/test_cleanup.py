import glob
import json
import os
import stat
import subprocess
import sys
import tarfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# The deliverable is the host's state. Its one executable part that needs root, a root login
# shell over the startup files, runs last in rsr_check's reduced mode (see rsr_check.py), after
# every other check has read what it needs, like backup.sh (a root job by design).
rc.lockdown()
rc.expose("/app")

OPS_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGb1q8xXkz0tOPsv1NwIuNm7pjUYxFq2rY3mH7cU5e0A ops@bastion"
REMOVED_REQUIRED = {"/etc/cron.d/php-sess-clean", "/usr/local/lib/.cache/dbus-helper", "/usr/local/lib/libsysd.so",
                    "/etc/ld.so.preload", "/etc/profile.d/locale-fix.sh"}
REMOVED_OPTIONAL = {"/tmp/.sysd/procs.log"}
REPAIRED_REQUIRED = {"/etc/passwd", "/etc/shadow", "/root/.ssh/authorized_keys", "/usr/local/bin/backup.sh", "/root/.bashrc"}
REPAIRED_OPTIONAL = {"/etc/passwd-", "/etc/shadow-", "/etc/group", "/etc/gshadow", "/etc/group-", "/etc/gshadow-"}
STARTUP = ["/etc/profile", "/etc/bash.bashrc", "/etc/environment", "/root/.bashrc", "/root/.profile",
           "/root/.bash_profile", "/root/.bash_login", "/etc/ld.so.preload"] + glob.glob("/etc/profile.d/*")
notes: list[str] = []


def text(p: str) -> str:
    try:
        return open(p, errors="replace").read()
    except OSError:
        return ""


def passwd_entries():
    return [ln.split(":") for ln in text("/etc/passwd").splitlines() if ln.count(":") >= 6]


def check(name: str, cond: bool, why: str) -> bool:
    if not cond:
        notes.append(f"{name}: {why}")
    return cond


def backdoor_account_removed() -> bool:
    ents = passwd_entries()
    shadow_users = [ln.split(":")[0] for ln in text("/etc/shadow").splitlines()]
    return (check("account", not any(e[0] == "sysupdate" for e in ents), "sysupdate still in /etc/passwd")
            & check("account", [e[0] for e in ents if e[2] == "0"] == ["root"], "uid 0 accounts other than root")
            & check("account", "sysupdate" not in shadow_users, "sysupdate still in /etc/shadow"))


def ssh_keys_clean() -> bool:
    lines = [ln.strip() for ln in text("/root/.ssh/authorized_keys").splitlines() if ln.strip() and not ln.strip().startswith("#")]
    extra = [p for p in glob.glob("/root/.ssh/authorized_keys2") + glob.glob("/home/*/.ssh/authorized_keys*") if text(p).strip()]
    return (check("ssh", lines == [OPS_KEY], f"authorized_keys holds {lines}")
            & check("ssh", not extra, f"other key files: {extra}"))


def persistence_removed() -> bool:
    ok = check("persist", not os.path.exists("/etc/cron.d/php-sess-clean"), "malicious cron file present")
    for p in glob.glob("/etc/cron*/**", recursive=True) + glob.glob("/var/spool/cron/**", recursive=True):
        if os.path.isfile(p):
            t = text(p)
            ok &= check("persist", "dbus-helper" not in t and "/dev/tcp" not in t, f"{p} still references the backdoor")
    ok &= check("persist", not os.path.exists("/usr/local/lib/libsysd.so"), "libsysd.so still present")
    ok &= check("persist", not text("/etc/ld.so.preload").strip(), "/etc/ld.so.preload not empty")
    for p in STARTUP:
        t = text(p)
        ok &= check("persist", "LD_PRELOAD" not in t and "/dev/tcp" not in t and "dbus-helper" not in t, f"{p} still malicious")
    return ok


def login_shell_clean() -> bool:
    r = rc.run(["bash", "-l", "-i", "-c", "echo \"[$LD_PRELOAD]\""], root=True, timeout=20,
               env={"HOME": "/root", "PATH": "/usr/bin:/bin", "USER": "root", "LOGNAME": "root"})
    return check("persist", "[]" in r.stdout, f"a root login shell still gets LD_PRELOAD: {r.stdout.strip()!r}")


def suid_shell_removed() -> bool:
    ok = check("suid", not os.path.exists("/usr/local/lib/.cache/dbus-helper"), "dbus-helper still present")
    r = subprocess.run(["find", "/", "-xdev", "-type", "f", "-perm", "/6000"], capture_output=True, text=True, timeout=60)
    for p in r.stdout.split():
        # usrmerge: dpkg may record /bin/su for what the filesystem shows as /usr/bin/su.
        aliases = {p, p.removeprefix("/usr")}
        owned = any(subprocess.run(["dpkg", "-S", a], capture_output=True).returncode == 0 for a in aliases)
        ok &= check("suid", owned, f"set-uid/gid file {p} is not from any package")
    return ok


def backup_script_repaired() -> bool:
    script = "/usr/local/bin/backup.sh"
    t = text(script)
    ok = check("backup", "shadow" not in t and ".sysd" not in t, "backup.sh still copies secrets")
    before = set(glob.glob("/tmp/.sysd/*")) | set(glob.glob("/tmp/**/s.*", recursive=True))
    dest = rc.scratch("backup-")
    r = rc.run([script, dest], root=True, timeout=60, env={"HOME": "/root", "USER": "root", "LOGNAME": "root"})
    ok &= check("backup", r.returncode == 0, f"backup.sh exited {r.returncode}: {r.stderr[-200:]}")
    try:
        with rc.as_user():
            names = set(tarfile.open(os.path.join(dest, "app.tar.gz")).getnames())
    except (OSError, tarfile.TarError):
        names = set()
    ok &= check("backup", {"app/config.env", "app/main.py"} <= names, f"archive holds {sorted(names)}")
    after = set(glob.glob("/tmp/.sysd/*")) | set(glob.glob("/tmp/**/s.*", recursive=True))
    ok &= check("backup", after <= before, f"backup.sh wrote {sorted(after - before)}")
    return ok


def system_intact() -> bool:
    ents = {e[0]: e for e in passwd_entries()}
    ok = check("intact", "root" in ents and ents["root"][2] == "0" and ents["root"][6] == "/bin/bash", "root account damaged")
    ok &= check("intact", "deploy" in ents and ents["deploy"][2] == "1001", "deploy account missing")
    ok &= check("intact", OPS_KEY in text("/root/.ssh/authorized_keys"), "approved ops@bastion key missing")
    ok &= check("intact", os.path.isfile("/etc/cron.d/e2scrub_all"), "packaged cron job e2scrub_all missing")
    for b in ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount", "/usr/bin/chsh", "/usr/bin/newgrp"):
        m = os.stat(b).st_mode if os.path.exists(b) else 0
        ok &= check("intact", bool(m & stat.S_ISUID), f"{b} lost its set-uid bit")
    bashrc = text("/root/.bashrc")
    ok &= check("intact", "alias ll='ls -la'" in bashrc and "executed by bash(1) for non-login shells" in bashrc,
                "root's .bashrc lost its legitimate content")
    ok &= check("intact", os.access("/usr/local/bin/backup.sh", os.X_OK), "backup.sh missing")
    return ok


def report() -> bool:
    try:
        rep = json.loads(rc.read_text("/app/incident_report.json"))
    except (OSError, ValueError) as e:
        return check("report", False, f"unreadable: {e}")
    if not check("report", isinstance(rep, dict) and set(rep) == {"accounts", "files_removed", "files_repaired"}, f"keys {list(rep) if isinstance(rep, dict) else rep}"):
        return False
    acc, rem, rep_ = (set(map(str, rep[k])) if isinstance(rep[k], list) else set() for k in ("accounts", "files_removed", "files_repaired"))
    ok = check("report", acc == {"sysupdate"}, f"accounts {sorted(acc)}")
    ok &= check("report", REMOVED_REQUIRED <= rem <= REMOVED_REQUIRED | REMOVED_OPTIONAL, f"files_removed {sorted(rem)}")
    ok &= check("report", REPAIRED_REQUIRED <= rep_ <= REPAIRED_REQUIRED | REPAIRED_OPTIONAL, f"files_repaired {sorted(rep_)}")
    ok &= check("report", not any(os.path.exists(p) for p in rem), "a file listed as removed still exists")
    return ok


results = {}
# The two root runs (backup.sh, the login shell) come after every check that reads the system.
for fn in (backdoor_account_removed, ssh_keys_clean, persistence_removed, suid_shell_removed, system_intact, report,
           backup_script_repaired):
    try:
        results[fn.__name__] = int(bool(fn()))
    except Exception as e:  # a broken system must score 0 for that milestone, not crash the checker
        notes.append(f"{fn.__name__}: checker error {e!r}")
        results[fn.__name__] = 0
try:
    results["persistence_removed"] &= int(login_shell_clean())
except Exception as e:  # noqa: BLE001
    notes.append(f"login shell: checker error {e!r}")
    results["persistence_removed"] = 0
reward = int(all(results.values()))
print("\n".join(notes))
print(json.dumps(results))
rc.write_reward(reward, results)
sys.exit(0 if reward else 1)
