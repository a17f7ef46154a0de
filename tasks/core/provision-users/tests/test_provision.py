import crypt  # deprecated since 3.11 but present; verifies the yescrypt hashes chpasswd writes
import csv
import os
import stat
import subprocess
import sys
import warnings
from types import SimpleNamespace

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# provision.sh adds users and groups: it needs root, so it runs in rsr_check's reduced mode
# (clean environment, no-new-privileges, fewer capabilities, its processes killed after each
# run). The checker parses the account files itself: Python's pwd/grp (and tools such as
# passwd -S) go through NSS, which would load whatever module a root deliverable configured in
# nsswitch.conf into the checker's own process. See rsr_check.py for what reduced mode leaves open.
rc.lockdown()
rc.expose("/app")

warnings.filterwarnings("ignore")
errors: list[str] = []


def _rows(path: str) -> list[list[str]]:
    with open(path) as f:
        return [ln.rstrip("\n").split(":") for ln in f if ln.strip() and not ln.startswith("#")]


def users_db() -> dict[str, SimpleNamespace]:
    return {r[0]: SimpleNamespace(pw_name=r[0], pw_uid=int(r[2]), pw_gid=int(r[3]), pw_gecos=r[4], pw_dir=r[5],
                                  pw_shell=r[6]) for r in _rows("/etc/passwd") if len(r) >= 7}


def groups_db() -> dict[str, SimpleNamespace]:
    return {r[0]: SimpleNamespace(gr_name=r[0], gr_gid=int(r[2]), gr_mem=[m for m in r[3].split(",") if m])
            for r in _rows("/etc/group") if len(r) >= 4}


def status_of(shadow_hash: str) -> str:
    """passwd -S's status letter, from the shadow entry."""
    if shadow_hash.startswith(("!", "*")):
        return "L"
    return "P" if shadow_hash else "NP"


def check_state() -> None:
    groups = list(csv.DictReader(open("/app/groups.csv")))
    users = list(csv.DictReader(open("/app/users.csv")))
    remove = [ln.strip() for ln in open("/app/remove.txt") if ln.strip()]
    gids = {}
    all_groups, all_users = groups_db(), users_db()
    for g in groups:
        e = all_groups.get(g["group"])
        if e is None:
            errors.append(f"group {g['group']} missing")
            continue
        gids[g["group"]] = e.gr_gid
        if e.gr_gid != int(g["gid"]):
            errors.append(f"group {g['group']} gid {e.gr_gid} != {g['gid']}")
        if g["shared"] == "yes":
            p = f"/srv/projects/{g['group']}"
            if not os.path.isdir(p):
                errors.append(f"{p} missing")
                continue
            st = os.stat(p)
            if st.st_uid != 0 or st.st_gid != int(g["gid"]) or stat.S_IMODE(st.st_mode) != 0o2770:
                errors.append(f"{p}: uid={st.st_uid} gid={st.st_gid} mode={oct(stat.S_IMODE(st.st_mode))}")
    shadow = {ln.split(":")[0]: ln.split(":")[1] for ln in open("/etc/shadow")}
    for u in users:
        name = u["username"]
        e = all_users.get(name)
        if e is None:
            errors.append(f"user {name} missing")
            continue
        if u["primary_group"] not in all_groups:
            errors.append(f"{name}: primary group {u['primary_group']} missing")
            continue
        want_gid = all_groups[u["primary_group"]].gr_gid
        if e.pw_uid != int(u["uid"]):
            errors.append(f"{name}: uid {e.pw_uid} != {u['uid']}")
        if e.pw_gid != want_gid:
            errors.append(f"{name}: primary gid {e.pw_gid} != {want_gid}")
        if e.pw_gecos != u["full_name"]:
            errors.append(f"{name}: gecos {e.pw_gecos!r} != {u['full_name']!r}")
        if e.pw_shell != u["shell"]:
            errors.append(f"{name}: shell {e.pw_shell} != {u['shell']}")
        home = f"/home/{name}"
        if e.pw_dir != home or not os.path.isdir(home):
            errors.append(f"{name}: home {e.pw_dir} (exists={os.path.isdir(home)})")
        else:
            st = os.stat(home)
            if st.st_uid != int(u["uid"]) or st.st_gid != want_gid or stat.S_IMODE(st.st_mode) != 0o750:
                errors.append(f"{home}: uid={st.st_uid} gid={st.st_gid} mode={oct(stat.S_IMODE(st.st_mode))}")
        want_sup = {g for g in u["groups"].split(";") if g}
        have_sup = {g.gr_name for g in all_groups.values() if name in g.gr_mem}
        if want_sup != have_sup:
            errors.append(f"{name}: supplementary groups {sorted(have_sup)} != {sorted(want_sup)}")
        h = shadow.get(name, "")
        status = [name, status_of(h)]
        if u["status"] == "active":
            if len(status) < 2 or status[1] != "P":
                errors.append(f"{name}: passwd -S status {status[1:2]} != P")
            elif crypt.crypt(u["password"], h) != h:
                errors.append(f"{name}: password does not match the csv")
        else:
            if len(status) < 2 or status[1] != "L":
                errors.append(f"{name}: passwd -S status {status[1:2]} != L")
    for name in remove:
        if name in all_users:
            errors.append(f"user {name} should have been removed")
        if os.path.exists(f"/home/{name}"):
            errors.append(f"/home/{name} should be gone")


def run_script(label: str) -> None:
    if not os.access("/app/provision.sh", os.X_OK):
        errors.append("/app/provision.sh missing or not executable")
        return
    r = rc.run(["/app/provision.sh"], root=True, timeout=120, env={"HOME": "/root", "USER": "root", "LOGNAME": "root"})
    if r.returncode != 0:
        errors.append(f"{label}: provision.sh exited {r.returncode}: {r.stderr[-500:]}")


def main() -> int:
    if subprocess.run(["id", "bystander"], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-u", "3999", "-s", "/bin/sh", "bystander"], check=True)
    check_state()  # state the agent left behind
    run_script("rerun")
    check_state()
    # Edit the inputs: a new shared group, a new user, changed memberships/shell/status, one more removal.
    with open("/app/groups.csv", "a") as f:
        f.write("qa,2005,yes\n")
    rows = list(csv.DictReader(open("/app/users.csv")))
    fields = list(rows[0].keys())
    for r in rows:
        if r["username"] == "alice":
            r["groups"] = "qa"
            r["shell"] = "/bin/sh"
        if r["username"] == "dave":
            r["status"] = "active"
            r["password"] = "Dave-now-active-9"
            r["shell"] = "/bin/bash"
        if r["username"] == "carol":
            r["full_name"] = "Carol Chen-Smith"
            r["groups"] = ""
    rows = [r for r in rows if r["username"] != "bob"]
    rows.append(dict(username="frank", uid="3006", full_name="Frank Fischer", primary_group="qa",
                     groups="developers;ops", shell="/bin/bash", status="active", password="fr4nk:Strong"))
    with open("/app/users.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    with open("/app/remove.txt", "a") as f:
        f.write("bob\n")
    run_script("edited inputs")
    check_state()
    if "bystander" not in users_db():
        errors.append("unrelated user 'bystander' was removed")
    if errors:
        print("FAIL:\n" + "\n".join(errors))
        return 1
    print("PASS: provisioning state correct across reruns")
    return 0


sys.exit(main())
