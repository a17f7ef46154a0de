import os
import re
import shutil
import sqlite3
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402
from gen_v1 import build  # noqa: E402

rc.lockdown()
rc.expose("/app")

errors: list[str] = []


def reference(db: str):
    con = sqlite3.connect(db)
    people, phones, tags = {}, set(), set()
    by_email = {}
    for cid, full, email, phone, tg, created in con.execute("SELECT * FROM contacts ORDER BY id"):
        e = (email or "").strip().lower() or None
        if e is not None and e in by_email:
            pid = by_email[e]
        else:
            pid = cid
            words = full.split()
            first, last = (" ".join(words[:-1]), words[-1]) if len(words) > 1 else (words[0], "")
            d, m, y = created.split(".")
            people[pid] = (first, last, e, f"{y}-{m}-{d}")
            if e is not None:
                by_email[e] = pid
        for num in (phone or "").split(";"):
            s = num.strip()
            digits = re.sub(r"\D", "", s)
            if digits:
                phones.add((pid, ("+" if s.startswith("+") else "") + digits))
        for t in (tg or "").split(","):
            t = t.strip().lower()
            if t:
                tags.add((pid, t))
    return people, phones, tags


def check_db(db: str, label: str) -> None:
    ref = reference(db)
    rc.hand_over(db)
    r = rc.run(["/app/migrate", db], timeout=60)
    if r.returncode != 0:
        errors.append(f"{label}: migrate exited {r.returncode}: {r.stderr[-300:]}")
        return
    con = sqlite3.connect(db)
    if con.execute("PRAGMA user_version").fetchone()[0] != 2:
        errors.append(f"{label}: user_version is not 2")
    if con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'contacts'").fetchone()[0]:
        errors.append(f"{label}: contacts table still exists")
    try:
        people = {r[0]: r[1:] for r in con.execute("SELECT id, first_name, last_name, email, created_at FROM people")}
        phones = set(con.execute("SELECT person_id, number FROM phones"))
        tags = set(con.execute("SELECT pt.person_id, t.name FROM person_tags pt JOIN tags t ON t.id = pt.tag_id"))
        ntag_rows = con.execute("SELECT count(*), count(DISTINCT name) FROM tags").fetchone()
    except sqlite3.Error as e:
        errors.append(f"{label}: cannot read v2 tables: {e}")
        return
    if people != ref[0]:
        diff = [(k, people.get(k), ref[0].get(k)) for k in sorted(set(people) | set(ref[0])) if people.get(k) != ref[0].get(k)][:4]
        errors.append(f"{label}: people differ (got, want): {diff}")
    if phones != ref[1]:
        errors.append(f"{label}: phones differ: extra {sorted(phones - ref[1])[:3]} missing {sorted(ref[1] - phones)[:3]}")
    if tags != ref[2]:
        errors.append(f"{label}: person tags differ: extra {sorted(tags - ref[2])[:3]} missing {sorted(ref[2] - tags)[:3]}")
    if ntag_rows[0] != ntag_rows[1] or ntag_rows[0] != len({t for _, t in ref[2]}):
        errors.append(f"{label}: tags table has {ntag_rows} rows, want {len({t for _, t in ref[2]})} distinct")
    # Declared structure.
    fks = {(r[2], r[3], r[4], r[6]) for r in con.execute("PRAGMA foreign_key_list(phones)")}
    if ("people", "person_id", "id", "CASCADE") not in fks:
        errors.append(f"{label}: phones.person_id lacks FK to people(id) ON DELETE CASCADE: {fks}")
    fks = {(r[2], r[3], r[4], r[6]) for r in con.execute("PRAGMA foreign_key_list(person_tags)")}
    if ("people", "person_id", "id", "CASCADE") not in fks or not any(f[0] == "tags" and f[1] == "tag_id" for f in fks):
        errors.append(f"{label}: person_tags foreign keys wrong: {fks}")
    cols = {r[1]: (r[2].upper(), r[3], r[5]) for r in con.execute("PRAGMA table_info(people)")}
    want_cols = {"id": ("INTEGER", 0, 1), "first_name": ("TEXT", 1, 0), "last_name": ("TEXT", 1, 0), "email": ("TEXT", 0, 0), "created_at": ("TEXT", 1, 0)}
    if cols != want_cols:
        errors.append(f"{label}: people columns {cols}")
    # Behaviour of the constraints.
    con.execute("PRAGMA foreign_keys = ON")
    try:
        con.execute("INSERT INTO people (first_name, last_name, email, created_at) VALUES ('x', 'y', 'DUP@x.org', '2020-01-01')")
        con.execute("INSERT INTO people (first_name, last_name, email, created_at) VALUES ('x', 'y', 'dup@X.ORG', '2020-01-01')")
        errors.append(f"{label}: email uniqueness is not case-insensitive")
    except sqlite3.IntegrityError:
        pass
    try:
        con.execute("INSERT INTO phones VALUES (999999, '123')")
        errors.append(f"{label}: phones accepts an unknown person_id")
    except sqlite3.IntegrityError:
        pass
    victim = next(iter(p for p, _ in ref[1]), None)
    if victim is not None:
        con.execute("DELETE FROM person_tags WHERE person_id = ?", (victim,))
        con.execute("DELETE FROM people WHERE id = ?", (victim,))
        if con.execute("SELECT count(*) FROM phones WHERE person_id = ?", (victim,)).fetchone()[0]:
            errors.append(f"{label}: deleting a person does not cascade to phones")
    con.rollback()
    con.close()


def main() -> int:
    if not os.access("/app/migrate", os.X_OK):
        print("FAIL: /app/migrate missing or not executable")
        return 1
    # The agent's own run on /app/contacts.db.
    con = sqlite3.connect("/app/contacts.db")
    if con.execute("PRAGMA user_version").fetchone()[0] != 2:
        errors.append("/app/contacts.db was not migrated")
    con.close()
    for seed in (31, 32, 33):
        db = os.path.join(rc.scratch(), "c.db")
        build(db, seed)
        check_db(db, f"seed {seed}")
        snap = db + ".snap"
        shutil.copy(db, snap)
        rc.hand_over(os.path.dirname(db))
        r = rc.run(["/app/migrate", db], timeout=60)
        a = sqlite3.connect(db)
        b = sqlite3.connect(snap)
        dump_a, dump_b = list(a.iterdump()), list(b.iterdump())
        if r.returncode != 0 or dump_a != dump_b:
            errors.append(f"seed {seed}: second run is not a no-op (rc={r.returncode})")
    if errors:
        print("FAIL:\n" + "\n".join(errors))
        return 1
    print("PASS: migrations correct")
    return 0


sys.exit(main())
