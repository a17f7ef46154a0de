import json
import os
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

FIXED = [
    ("a = 1\n[s]\nb=2\n", {"global": {"a": 1}, "s": {"b": 2}}),
    ("[ spaced name ]\n  key   =   value with  spaces  \n", {"spaced name": {"key": "value with  spaces"}}),
    ("[x]\nurl = http://h:80/p?a=b\nratio: 1:2\n", {"x": {"url": "http://h:80/p?a=b", "ratio": "1:2"}}),
    ("[x]\nq = \"42\"\nr = \"yes\"\ns = \"a \"quoted\" word\"\nt = \"\n", {"x": {"q": "42", "r": "yes", "s": "a \"quoted\" word", "t": "\""}}),
    ("[x]\nn = -7\nz = 007\nf = 1.5\nh = 0x10\np = +3\n", {"x": {"n": -7, "z": 7, "f": "1.5", "h": "0x10", "p": "+3"}}),
    ("[x]\nA = ON\nb = Off\nc = TRUE\nd = no\ne = nope\n", {"x": {"A": True, "b": False, "c": True, "d": False, "e": "nope"}}),
    ("[x]\nk = v ; not a comment\n# real comment\n   ; indented comment\nempty =\n", {"x": {"k": "v ; not a comment", "empty": ""}}),
    ("[a]\nk=1\n[b]\n[a]\nk=2\nm=3\n", {"a": {"k": 2, "m": 3}, "b": {}}),
    ("[x]\nKey = 1\nkey = 2\n", {"x": {"Key": 1, "key": 2}}),
    ("[global]\n", {"global": {}}),
    ("\n\n   \n", {}),
]


def ref_value(v: str):
    import re
    if len(v) >= 2 and v.startswith('"') and v.endswith('"'):
        return v[1:-1]
    if re.fullmatch(r"-?[0-9]+", v):
        return int(v)
    if v.lower() in ("true", "yes", "on"):
        return True
    if v.lower() in ("false", "no", "off"):
        return False
    return v


def random_case(rng: random.Random):
    out, lines = {}, []
    cur = "global"
    for _ in range(rng.randint(5, 30)):
        r = rng.random()
        if r < 0.2:
            cur = rng.choice(["main", "db", "cache", "web server", "global"])
            lines.append(rng.choice(["", "  "]) + f"[{rng.choice(['', ' '])}{cur}]")
            out.setdefault(cur, {})
        elif r < 0.3:
            lines.append(rng.choice(["; note", "# note = 3", "", "   "]))
        else:
            k = rng.choice(["host", "port", "Port", "enabled", "path", "name", "level"])
            v = rng.choice(["12", "-3", "yes", "Off", "x=y", "a:b", "\"quoted; v\"", "\"12\"", "", "plain text", "3.14", "0"])
            sep = rng.choice([" = ", "=", ": ", " :"])
            lines.append(f"{k}{sep}{v}")
            s = k + sep + v
            i = min(x for x in (s.find("="), s.find(":")) if x >= 0)
            out.setdefault(cur, {})[s[:i].strip()] = ref_value(s[i + 1:].strip())
    return "\n".join(lines) + "\n", out


def main() -> int:
    if not os.access("/app/ini2json", os.X_OK):
        print("FAIL: /app/ini2json missing or not executable")
        return 1
    cases = list(FIXED)
    rng = random.Random(2024)
    cases += [random_case(rng) for _ in range(12)]
    bad = 0
    d = rc.scratch()
    for i, (text, want) in enumerate(cases):
        p = os.path.join(d, f"c{i}.ini")
        rc.put(p, text)
        r = rc.run(["/app/ini2json", p], timeout=20)
        try:
            got = json.loads(r.stdout)
        except ValueError:
            got = f"<not JSON: {r.stdout[:100]!r} {r.stderr[-200:]!r}>"
        # Compare types too: 1 == True in Python, so compare the JSON texts of canonical dumps.
        if r.returncode != 0 or json.dumps(got, sort_keys=True) != json.dumps(want, sort_keys=True):
            bad += 1
            print(f"FAIL case {i}:\n{text}\nwant {want}\ngot  {got}")
    if bad:
        print(f"{bad}/{len(cases)} cases wrong")
        return 1
    print(f"PASS: {len(cases)} files converted correctly")
    return 0


sys.exit(main())
