#!/usr/bin/env python3
"""contacts v1 -> v2, in one transaction."""
import re
import sqlite3
import sys

V2 = """
CREATE TABLE people (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
                     email TEXT UNIQUE COLLATE NOCASE, created_at TEXT NOT NULL);
CREATE TABLE phones (person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE,
                     number TEXT NOT NULL, PRIMARY KEY (person_id, number));
CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE person_tags (person_id INTEGER NOT NULL REFERENCES people(id) ON DELETE CASCADE,
                          tag_id INTEGER NOT NULL REFERENCES tags(id),
                          PRIMARY KEY (person_id, tag_id));
"""

con = sqlite3.connect(sys.argv[1], isolation_level=None)
if con.execute("PRAGMA user_version").fetchone()[0] >= 2:
    sys.exit(0)
con.execute("BEGIN IMMEDIATE")
try:
    for stmt in V2.split(";"):
        if stmt.strip():
            con.execute(stmt)
    keep: dict[str, int] = {}
    for cid, full, email, phone, tags, created in con.execute("SELECT * FROM contacts ORDER BY id").fetchall():
        e = (email or "").strip().lower() or None
        if e is not None and e in keep:
            pid = keep[e]
        else:
            pid = cid
            words = full.split()
            first, last = (" ".join(words[:-1]), words[-1]) if len(words) > 1 else (words[0], "")
            d, m, y = created.split(".")
            con.execute("INSERT INTO people VALUES (?, ?, ?, ?, ?)", (pid, first, last, e, f"{y}-{m}-{d}"))
            if e is not None:
                keep[e] = pid
        for num in (phone or "").split(";"):
            num = num.strip()
            digits = re.sub(r"\D", "", num)
            if digits:
                con.execute("INSERT OR IGNORE INTO phones VALUES (?, ?)", (pid, ("+" if num.startswith("+") else "") + digits))
        for t in (tags or "").split(","):
            t = t.strip().lower()
            if t:
                con.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (t,))
                con.execute("INSERT OR IGNORE INTO person_tags SELECT ?, id FROM tags WHERE name = ?", (pid, t))
    con.execute("DROP TABLE contacts")
    con.execute("PRAGMA user_version = 2")
    con.execute("COMMIT")
except Exception:
    con.execute("ROLLBACK")
    raise
