import hashlib
import os
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

BASE = ["password", "letmein", "dragon", "sunshine", "qwerty123", "monkey", "trustno1", "baseball",
        "pass word", "correct horse", "Müller2023", "пароль", "admin!", "zaq1@WSX", "1234", "12345"]


def make_case(rng: random.Random):
    words = BASE + [f"w{rng.randint(0, 10**6)}" for _ in range(60)]
    rng.shuffle(words)
    lines, want = ["# comment line", ""], []
    for i in range(10):
        user = f"user{i}_{rng.randint(100, 999)}"
        kind = rng.random()
        if kind < 0.15:
            lines.append(f"{user}:{rng.choice(['!', '*', '!!'])}:{2000 + i}:disabled")
            continue
        pw = rng.choice(words) if kind < 0.6 else f"strong-{rng.random()}"
        iters = rng.choice([50, 120, 300])
        salt = bytes(rng.randrange(256) for _ in range(rng.choice([8, 16])))
        digest = hashlib.pbkdf2_hmac("sha256", pw.encode(), salt, iters).hex()
        if kind > 0.9:  # right password, but a sha1 digest: a different scheme must not match
            digest = hashlib.pbkdf2_hmac("sha1", pw.encode(), salt, iters).hex()
            pw = None
            words.append("unused")
        lines.append(f"{user}:$pbkdf2-sha256${iters}${salt.hex()}${digest}:{2000 + i}:user {i}")
        if pw in words:
            want.append(f"{user}:{pw}")
    return lines, words, want


def main() -> int:
    if not os.access("/app/crack", os.X_OK):
        print("FAIL: /app/crack missing or not executable")
        return 1
    bad = 0
    for seed in range(4):
        rng = random.Random(seed + 40)
        lines, words, want = make_case(rng)
        d = rc.scratch()
        sh, wl = os.path.join(d, "s"), os.path.join(d, "w")
        rc.put(sh, ("\n".join(lines) + "\n").encode("utf-8"))
        rc.put(wl, ("\n".join(words[:30]) + "\n\n" + "\n".join(words[30:]) + "\n").encode("utf-8"))
        r = rc.run(["/app/crack", sh, wl], timeout=60, text=False)
        got = r.stdout.decode("utf-8", "replace").splitlines()
        if r.returncode != 0 or got != want:
            bad += 1
            print(f"FAIL seed {seed}: rc={r.returncode}\nwant {want}\ngot  {got}\n{r.stderr[-300:].decode('utf-8', 'replace')}")
    if bad:
        return 1
    print("PASS: cracked exactly the weak accounts")
    return 0


sys.exit(main())
