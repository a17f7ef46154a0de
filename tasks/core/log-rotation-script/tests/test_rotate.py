import gzip
import os
import stat
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# rotate.sh runs as nobody over log directories that belong to nobody; a script that recreates
# web.log instead of truncating it still shows (new inode).
rc.lockdown()
rc.expose("/app")

errors: list[str] = []


def rotate(d: str, keep: int) -> None:
    rc.hand_over(d)
    r = rc.run(["/app/rotate.sh", d, str(keep)], timeout=60)
    if r.returncode != 0:
        errors.append(f"rotate.sh {keep} exited {r.returncode}: {r.stderr[-300:]}")


def gz(path: str) -> bytes | None:
    try:
        with rc.as_user():  # what the script left is read (and below, appended to) as nobody
            return gzip.open(path).read()
    except (OSError, EOFError):
        return None


def main() -> int:
    if not os.access("/app/rotate.sh", os.X_OK):
        print("FAIL: /app/rotate.sh missing or not executable")
        return 1
    d = rc.scratch("logs-")
    os.makedirs(os.path.join(d, "sub"))
    web = os.path.join(d, "web.log")
    db = os.path.join(d, "db.log")
    idle = os.path.join(d, "idle.log")
    sub = os.path.join(d, "sub", "nested.log")
    bak = os.path.join(d, "web.log.bak")
    for p, data in ((idle, b""), (sub, b"nested\n"), (bak, b"backup\n")):
        open(p, "wb").write(data)
    # A pre-existing old generation of idle.log must survive because idle.log stays empty.
    with gzip.open(idle + ".1.gz", "wb") as f:
        f.write(b"ancient idle\n")
    # An unrelated archive with a .gz name must be untouched.
    with gzip.open(os.path.join(d, "other.txt.1.gz"), "wb") as f:
        f.write(b"other\n")
    writer = open(web, "ab", buffering=0)  # the "application", kept open across rotations
    os.chmod(web, 0o640)
    os.chown(web, rc.RUN_UID, rc.RUN_GID)
    st0 = os.stat(web)
    history: list[bytes] = []  # web.log contents at each rotation, newest last
    dbhist: list[bytes] = []
    keep = 3
    for rnd in range(6):
        chunk = b"".join(b"round %d line %d %s\n" % (rnd, i, b"x" * (i * 7 % 40)) for i in range(50 + rnd))
        writer.write(chunk)
        history.append(chunk)
        if rnd % 2 == 0:
            dchunk = b"db round %d\n" % rnd
            with rc.as_user(), open(db, "ab") as f:
                f.write(dchunk)
            dbhist.append(dchunk)
        rotate(d, keep)
        st = os.stat(web)
        if (st.st_ino != st0.st_ino or st.st_uid != rc.RUN_UID or st.st_gid != rc.RUN_GID
                or stat.S_IMODE(st.st_mode) != 0o640):
            errors.append(f"round {rnd}: web.log inode/owner/mode changed")
        if st.st_size != 0:
            errors.append(f"round {rnd}: web.log not truncated (size {st.st_size})")
        for k in range(1, keep + 2):
            p = f"{web}.{k}.gz"
            expect = history[-k] if k <= min(keep, len(history)) else None
            got = gz(p) if os.path.exists(p) else None
            if expect != got:
                errors.append(f"round {rnd}: {os.path.basename(p)} has wrong content (exists={os.path.exists(p)})")
        # db.log is rotated only in rounds where it had data.
        if rnd % 2 == 0:
            for k in range(1, keep + 2):
                p = f"{db}.{k}.gz"
                expect = dbhist[-k] if k <= min(keep, len(dbhist)) else None
                got = gz(p) if os.path.exists(p) else None
                if expect != got:
                    errors.append(f"round {rnd}: {os.path.basename(p)} wrong (exists={os.path.exists(p)})")
    # Appends through the still-open descriptor must land at the start of the truncated file.
    writer.write(b"after\n")
    if rc.read_bytes(web) != b"after\n":
        errors.append("writes after rotation do not land in web.log")
    if gz(idle + ".1.gz") != b"ancient idle\n" or os.path.exists(idle + ".2.gz"):
        errors.append("empty idle.log's generations were touched")
    if rc.read_bytes(sub) != b"nested\n" or os.path.exists(sub + ".1.gz"):
        errors.append("file in a subdirectory was rotated")
    if rc.read_bytes(bak) != b"backup\n" or os.path.exists(bak + ".1.gz"):
        errors.append("web.log.bak was modified")
    if gz(os.path.join(d, "other.txt.1.gz")) != b"other\n" or os.path.exists(os.path.join(d, "other.txt.2.gz")):
        errors.append("unrelated other.txt.1.gz was touched")
    # Large KEEP with two-digit generation numbers.
    d2 = rc.scratch("logs2-")
    big = os.path.join(d2, "big.log")
    for i in range(12):
        with rc.as_user(), open(big, "ab") as f:
            f.write(b"gen %d\n" % i)
        rotate(d2, 11)
    for k in range(1, 12):
        if gz(f"{big}.{k}.gz") != b"gen %d\n" % (12 - k):
            errors.append(f"KEEP=11: big.log.{k}.gz wrong")
    if os.path.exists(f"{big}.12.gz"):
        errors.append("KEEP=11: big.log.12.gz should have been deleted")
    if errors:
        print("FAIL:\n" + "\n".join(dict.fromkeys(errors)))
        return 1
    print("PASS: rotation behaves as specified")
    return 0


sys.exit(main())
