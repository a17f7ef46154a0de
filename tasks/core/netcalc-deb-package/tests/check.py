"""Inspects the built .deb and installs, edits, reinstalls, removes and purges it."""
import gzip
import hashlib
import ipaddress
import os
import random
import sys
import tarfile
import tempfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# The package is inspected and unpacked as nobody. Installing it (dpkg -i/-r/-P, which runs its
# maintainer scripts) needs root: those commands run in rsr_check's reduced mode; see
# rsr_check.py for what that leaves open.
rc.lockdown()
rc.expose("/app")


def _unpack(json_path, dest):
    """Test fixtures are stored as one JSON file so no fixture file is byte-identical to a file the
    image ships (the isolation check looks for hidden test files inside the image)."""
    import json as _json
    import os as _os
    for rel, text in _json.load(open(json_path)).items():
        _os.makedirs(_os.path.dirname(_os.path.join(dest, rel)), exist_ok=True)
        with open(_os.path.join(dest, rel), "w") as fh:
            fh.write(text)

PRISTINE = tempfile.mkdtemp()  # root-only; /tests may be read-only
_unpack("/tests/pristine.json", PRISTINE)

DEB = "/app/dist/netcalc_1.4.2-1_amd64.deb"
notes = []
rng = random.Random(1919)


def expect(cond, msg):
    if not cond:
        notes.append(msg)
        raise AssertionError(msg)


def sh(cmd, root=False):
    return rc.run(["sh", "-c", cmd], root=root, timeout=60, cwd="/",
                  env={"HOME": "/root", "USER": "root", "LOGNAME": "root"} if root else None)


def dpkg(args):
    return sh(f"dpkg {args}", root=True)


def control():
    r = sh(f"dpkg-deb -f {DEB}")
    expect(r.returncode == 0, f"dpkg-deb -f failed: {r.stderr[-300:]}")
    fields, last = {}, None
    for line in r.stdout.splitlines():
        if line.startswith(" ") and last:
            fields[last] += "\n" + line
        else:
            k, _, v = line.partition(":")
            fields[k.strip()] = v.strip()
            last = k.strip()
    return fields


def data_members():
    tmp = rc.scratch("deb-")
    r = sh(f"dpkg-deb --fsys-tarfile {DEB} > {tmp}/data.tar")
    expect(r.returncode == 0, "cannot extract the data archive")
    with rc.as_user():
        return tarfile.open(f"{tmp}/data.tar"), tmp


FILES = {"usr/bin/netcalc": 0o755, "etc/netcalc.conf": 0o644, "usr/share/man/man1/netcalc.1.gz": 0o644,
         "usr/share/doc/netcalc/copyright": 0o644, "usr/share/doc/netcalc/changelog.gz": 0o644}


def m_package_metadata():
    expect(os.path.isfile(DEB), f"{DEB} not found")
    f = control()
    want = {"Package": "netcalc", "Version": "1.4.2-1", "Architecture": "amd64",
            "Maintainer": "Net Calc Team <netcalc@example.org>", "Depends": "libc6", "Section": "net",
            "Priority": "optional"}
    for k, v in want.items():
        expect(f.get(k) == v, f"control field {k} is {f.get(k)!r}, expected {v!r}")
    desc = f.get("Description", "")
    expect(desc.split("\n")[0].strip() != "" and len(desc.split("\n")) >= 2, "Description needs a synopsis and extended text")
    tar, _ = data_members()
    total = sum(m.size for m in tar.getmembers() if m.isfile())
    size = f.get("Installed-Size", "")
    expect(size.isdigit() and int(size) * 1024 >= total, f"Installed-Size {size!r} smaller than {total} bytes of files")
    r = sh(f"dpkg-deb --ctrl-tarfile {DEB} | tar -t")
    names = {n.strip("./") for n in r.stdout.split()}
    expect({"control", "md5sums", "conffiles"} <= names, f"control members: {sorted(names)}")


def m_file_layout():
    tar, tmp = data_members()
    files, dirs = {}, {}
    for m in tar.getmembers():
        name = m.name.lstrip("./").rstrip("/")
        if not name:
            continue
        expect(m.uid == 0 and m.gid == 0, f"{name} is owned by {m.uid}:{m.gid}, not root:root")
        if m.isdir():
            dirs[name] = m.mode & 0o7777
        elif m.isfile():
            files[name] = m.mode & 0o7777
        else:
            expect(False, f"unexpected member type for {name}")
    expect(set(files) == set(FILES), f"packaged files {sorted(files)}, expected {sorted(FILES)}")
    for name, mode in FILES.items():
        expect(files[name] == mode, f"{name} has mode {oct(files[name])}, expected {oct(mode)}")
    needed = {os.path.dirname(n) for n in FILES}
    for n in list(needed):
        while "/" in n:
            n = os.path.dirname(n)
            needed.add(n)
    expect(set(dirs) == needed, f"directories {sorted(set(dirs) ^ needed)} unexpected or missing")
    expect(all(m == 0o755 for m in dirs.values()), "directories must be 0755")
    x = sh(f"mkdir -p {tmp}/root && tar -xf {tmp}/data.tar -C {tmp}/root")  # as nobody
    expect(x.returncode == 0, f"cannot unpack the data archive: {x.stderr[-200:]}")
    src = PRISTINE
    expect(gzip.decompress(rc.read_bytes(f"{tmp}/root/usr/share/man/man1/netcalc.1.gz"))
           == open(f"{src}/netcalc.1", "rb").read(), "man page content differs")
    expect(gzip.decompress(rc.read_bytes(f"{tmp}/root/usr/share/doc/netcalc/changelog.gz"))
           == open(f"{src}/NEWS", "rb").read(), "changelog.gz is not NEWS")
    for gz in ("usr/share/man/man1/netcalc.1.gz", "usr/share/doc/netcalc/changelog.gz"):
        head = rc.read_bytes(f"{tmp}/root/{gz}")[:10]
        expect(head[4:8] == b"\0\0\0\0" and head[3] & 0x08 == 0, f"{gz} not compressed with gzip -n (name/time stored)")
        expect(head[8] == 2, f"{gz} not compressed with -9")
    expect(rc.read_text(f"{tmp}/root/usr/share/doc/netcalc/copyright") == open(f"{src}/COPYING").read(), "copyright differs from COPYING")
    r = sh(f"file {tmp}/root/usr/bin/netcalc")
    expect("ELF" in r.stdout and ", stripped" in r.stdout, f"binary not a stripped ELF: {r.stdout.strip()}")
    r = sh(f"strings {tmp}/root/usr/bin/netcalc | grep -x /etc/netcalc.conf")
    expect(r.returncode == 0, "binary does not read /etc/netcalc.conf")
    ctl = sh(f"mkdir -p {tmp}/ctl && dpkg-deb -e {DEB} {tmp}/ctl")
    expect(ctl.returncode == 0, "cannot extract control archive")
    conff = rc.read_text(f"{tmp}/ctl/conffiles").split()
    expect(conff == ["/etc/netcalc.conf"], f"conffiles lists {conff}")
    sums = {}
    for line in rc.read_text(f"{tmp}/ctl/md5sums").splitlines():
        digest, path = line.split(None, 1)
        sums[path.strip().lstrip("*")] = digest
    exp = {n: hashlib.md5(rc.read_bytes(f"{tmp}/root/{n}")).hexdigest() for n in FILES if n != "etc/netcalc.conf"}
    expect(sums == exp, f"md5sums wrong: {sums} vs {exp}")


def expected_output(cidr, hosts=True):
    iface = ipaddress.ip_interface(cidr)
    net = iface.network
    p = net.prefixlen
    first, last = (net.network_address + 1, net.broadcast_address - 1) if p <= 30 else (net.network_address, net.broadcast_address)
    out = f"{cidr}\n" + "".join(f"{k:<10} {v}\n" for k, v in [("network", net.network_address), ("netmask", net.netmask),
                                                              ("broadcast", net.broadcast_address), ("first", first), ("last", last)])
    if hosts:
        out += f"{'hosts':<10} {1 if p == 32 else 2 if p == 31 else 2 ** (32 - p) - 2}\n"
    return out


def cidrs():
    return [f"{ipaddress.IPv4Address(rng.getrandbits(32))}/{rng.choice([0, 8, 16, 23, 24, 27, 30, 31, 32, rng.randint(0, 32)])}" for _ in range(12)]


def install():
    dpkg("-P netcalc")
    r = dpkg(f"-i {DEB}")
    expect(r.returncode == 0, f"dpkg -i failed: {r.stderr[-400:]}")


def m_installs_and_runs():
    install()
    r = sh("dpkg -s netcalc")
    expect("Status: install ok installed" in r.stdout, "netcalc not installed according to dpkg -s")
    args = cidrs()
    r = rc.run(["/usr/bin/netcalc", *args], timeout=10, env={"PATH": "/usr/bin:/bin"})
    exp = "".join(expected_output(a) for a in args)
    expect(r.returncode == 0 and r.stdout == exp, f"netcalc output wrong:\n{r.stdout[:300]}\nexpected\n{exp[:300]}")
    r = sh("dpkg -L netcalc")
    expect("/usr/bin/netcalc" in r.stdout.split(), "dpkg -L does not list /usr/bin/netcalc")


def m_conffile_preserved():
    install()
    with open("/etc/netcalc.conf", "w") as f:
        f.write("# edited by the admin\nshow_hosts = no\n")
    r = dpkg(f"-i --force-confold {DEB}")
    expect(r.returncode == 0, "reinstall failed")
    expect("show_hosts = no" in open("/etc/netcalc.conf").read(), "reinstall overwrote the edited /etc/netcalc.conf")
    args = cidrs()[:4]
    r = rc.run(["/usr/bin/netcalc", *args], timeout=10)
    expect(r.stdout == "".join(expected_output(a, hosts=False) for a in args), "installed netcalc ignores /etc/netcalc.conf")


def m_clean_removal():
    install()
    r = dpkg("-r netcalc")
    expect(r.returncode == 0, f"dpkg -r failed: {r.stderr[-300:]}")
    expect(not os.path.exists("/usr/bin/netcalc"), "dpkg -r left /usr/bin/netcalc")
    expect(os.path.exists("/etc/netcalc.conf"), "dpkg -r removed the conffile (it must stay until purge)")
    r = dpkg("-P netcalc")
    expect(r.returncode == 0 and not os.path.exists("/etc/netcalc.conf"), "dpkg -P did not remove /etc/netcalc.conf")
    expect(not os.path.exists("/usr/share/doc/netcalc"), "purge left /usr/share/doc/netcalc")


MILESTONES = [m_package_metadata, m_file_layout, m_installs_and_runs, m_conffile_preserved, m_clean_removal]
result = {}
for m in MILESTONES:
    name = m.__name__[2:]
    try:
        m()
        result[name] = 1
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, AssertionError):
            notes.append(f"{name}: {type(e).__name__}: {e}")
        result[name] = 0
    print(f"{name}: {'PASS' if result[name] else 'FAIL'}")
for n in notes:
    print("  note:", n[:400])
reward = int(all(result.values()))
rc.write_reward(reward, result)
sys.exit(0 if reward else 1)
