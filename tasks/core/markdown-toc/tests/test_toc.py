import os
import random
import re
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

FIXED = [
    ("# Title\n## A\n### B\n#### C\n##### D\n", "- [A](#a)\n  - [B](#b)\n    - [C](#c)\n"),
    ("## Usage\n## Usage\n# Usage\n## Usage\n", "- [Usage](#usage)\n- [Usage](#usage-1)\n- [Usage](#usage-3)\n"),
    ("## Hello, World! (v2.0)\n", "- [Hello, World! (v2.0)](#hello-world-v20)\n"),
    ("## a  b -- c_d\n", "- [a  b -- c_d](#a--b----c_d)\n"),
    ("## Ünïcödé Straße 3\n", "- [Ünïcödé Straße 3](#ünïcödé-straße-3)\n"),
    ("## Closing ##\n## Not#closing\n## C# ###   \n## ###\n##\n", "- [Closing](#closing)\n- [Not#closing](#notclosing)\n- [C#](#c)\n"),
    ("#tag\n####### seven\n ## indented\n##	tab\n## ok\n", "- [ok](#ok)\n"),
    ("```\n## no\n```\n## yes\n", "- [yes](#yes)\n"),
    ("````md\n```\n## still code\n````\n## after\n", "- [after](#after)\n"),
    ("~~~\n## no\n```\n## no2\n~~~  \n## yes\n", "- [yes](#yes)\n"),
    ("```\n## no\n``` not a close\n## no2\n", ""),
    ("## `code` *em* [link](x)\n", "- [`code` *em* [link](x)](#code-em-linkx)\n"),
    ("## x\n## x-1\n## x\n", "- [x](#x)\n- [x-1](#x-1)\n- [x](#x-1)\n"),
]


def slug_base(t: str) -> str:
    t = t.lower()
    t = "".join(ch for ch in t if ch.isalnum() or ch in " -_")
    return t.replace(" ", "-")


def ref(doc: str) -> str:
    out, seen, fence = [], {}, None
    for line in doc.split("\n"):
        if fence:
            ch, n = fence
            s = line.rstrip(" ")
            if len(s) >= n and set(s) == {ch}:
                fence = None
            continue
        m = re.match(r"(`{3,}|~{3,})", line)
        if m:
            fence = (m.group(1)[0], len(m.group(1)))
            continue
        m = re.match(r"(#{1,6}) (.*)$", line)
        if not m:
            continue
        text = m.group(2)
        text = re.sub(r"(^|\s)#+\s*$", "", text).strip() if re.search(r"(^|\s)#+\s*$", text) else text.strip()
        if not text:
            continue
        base = slug_base(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchor = base if n == 0 else f"{base}-{n}"
        level = len(m.group(1))
        if 2 <= level <= 4:
            out.append("  " * (level - 2) + f"- [{text}](#{anchor})")
    return "".join(x + "\n" for x in out)


def random_doc(rng: random.Random) -> str:
    words = ["Setup", "Usage", "API", "Notes", "FAQ", "Über", "v1.2", "C++", "snake_case", "a-b", "(beta)", "&", "Überblick", "x"]
    lines = []
    for _ in range(rng.randint(10, 40)):
        r = rng.random()
        if r < 0.5:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
            close = rng.choice(["", "", " ##", " #", "  ###  "])
            lines.append("#" * rng.randint(1, 6) + " " + text + close)
        elif r < 0.6:
            fch = rng.choice(["`", "~"])
            n = rng.randint(3, 5)
            lines += [fch * n + rng.choice(["", "python"]), "## " + rng.choice(words), fch * (n - 1), fch * (n + rng.randint(0, 1)) + rng.choice(["", " "])]
        else:
            lines.append(rng.choice(["Paragraph text.", "", "#hashtag", "- item", "    ## indented code"]))
    return "\n".join(lines) + "\n"


def main() -> int:
    if not os.access("/app/mdtoc", os.X_OK):
        print("FAIL: /app/mdtoc missing or not executable")
        return 1
    cases = list(FIXED)
    rng = random.Random(77)
    for _ in range(10):
        doc = random_doc(rng)
        cases.append((doc, ref(doc)))
    # The fixed cases double as a check of the reference itself.
    for doc, want in FIXED:
        assert ref(doc) == want, (doc, ref(doc), want)
    bad = 0
    d = rc.scratch()
    for i, (doc, want) in enumerate(cases):
        p = rc.put(os.path.join(d, f"c{i}.md"), doc.encode("utf-8"))
        r = rc.run(["/app/mdtoc", p], timeout=20, text=False)
        got = r.stdout.decode("utf-8", "replace").replace("\r\n", "\n")
        if r.returncode != 0 or got != want:
            bad += 1
            print(f"FAIL case {i}:\n--- doc\n{doc}--- want\n{want}--- got\n{got}")
    if bad:
        print(f"{bad}/{len(cases)} documents wrong")
        return 1
    print(f"PASS: {len(cases)} tables of contents correct")
    return 0


sys.exit(main())
