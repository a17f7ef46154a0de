import base64
import hashlib
import hmac
import json
import os
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")


def b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def enc(obj) -> str:
    return b64(json.dumps(obj, separators=(",", ":")).encode() if not isinstance(obj, bytes) else obj)


def sign(key: bytes, h: str, p: str) -> str:
    return b64(hmac.new(key, f"{h}.{p}".encode(), hashlib.sha256).digest())


def token(key, header, payload, sig=None):
    h, p = enc(header), enc(payload)
    return f"{h}.{p}.{sig if sig is not None else sign(key, h, p)}"


def cases(rng: random.Random, key: bytes, now: int):
    hs = {"alg": "HS256", "typ": "JWT"}
    sub = f"user-{rng.randint(1, 9999)}"
    good = {"sub": sub, "exp": now + 60, "nbf": now - 60, "role": "admin"}
    other = b"not-the-key" + bytes([rng.randrange(256)])
    c = [
        (token(key, hs, good), f"VALID {sub}"),
        (token(key, {"alg": "HS256"}, {"sub": sub}), f"VALID {sub}"),
        (token(key, {"alg": "HS256", "kid": "k1"}, {"sub": sub, "exp": now + 1}), f"VALID {sub}"),
        (token(key, hs, {"sub": sub, "nbf": now}), f"VALID {sub}"),
        (token(key, hs, {"sub": sub, "exp": now}), "INVALID expired"),
        (token(key, hs, {"sub": sub, "exp": now - 3600, "nbf": now + 10}), "INVALID expired"),
        (token(key, hs, {"sub": sub, "nbf": now + 1}), "INVALID not_yet_valid"),
        (token(other, hs, good), "INVALID bad_signature"),
        (token(key, hs, good)[:-2] + ("AA" if not token(key, hs, good).endswith("AA") else "BB"), "INVALID bad_signature"),
        (token(key, {"alg": "none"}, good, sig=""), "INVALID bad_alg"),
        (token(key, {"alg": "hs256"}, good), "INVALID bad_alg"),
        (token(key, {"typ": "JWT"}, good), "INVALID bad_alg"),
        (token(key, {"alg": "HS512"}, {"sub": sub, "exp": now - 5}), "INVALID bad_alg"),
        (token(key, {"alg": "none"}, {"exp": now}, sig=""), "INVALID malformed"),
        (token(key, hs, {"sub": 42}), "INVALID malformed"),
        (token(key, hs, {"sub": sub, "exp": "tomorrow"}), "INVALID malformed"),
        (token(key, hs, {"sub": sub, "exp": float(now + 100) + 0.5}), "INVALID malformed"),
        (token(key, hs, ["sub", sub]), "INVALID malformed"),
        (token(key, hs, b"{not json"), "INVALID malformed"),
        (".".join(token(key, hs, good).split(".")[:2]), "INVALID malformed"),
        (token(key, hs, good) + ".extra", "INVALID malformed"),
        (token(key, hs, good) + "=", "INVALID malformed"),
        (token(key, hs, good).replace("-", "+").replace("_", "/") if any(ch in token(key, hs, good) for ch in "-_") else "a+b.c.d", "INVALID malformed"),
        ("", "INVALID malformed"),
    ]
    # Signature over a re-encoded header must not be accepted: the bytes as sent are what count.
    h = enc(hs)
    p = enc(good)
    h2 = b64(json.dumps(hs, indent=1).encode())
    c.append((f"{h2}.{p}.{sign(key, h, p)}", "INVALID bad_signature"))
    c.append((f"{h2}.{p}.{sign(key, h2, p)}", f"VALID {sub}"))
    return c


def main() -> int:
    if not os.access("/app/jwtcheck", os.X_OK):
        print("FAIL: /app/jwtcheck missing or not executable")
        return 1
    bad = total = 0
    for seed in range(2):
        rng = random.Random(seed + 99)
        key = bytes(rng.randrange(256) for _ in range(24)) + b"\n"  # trailing newline is part of the key
        kf = rc.put(os.path.join(rc.scratch(), "k"), key)
        now = 1_700_000_000 + rng.randint(0, 10**7)
        for tok, want in cases(rng, key, now):
            total += 1
            r = rc.run(["/app/jwtcheck", "--key", kf, "--now", str(now), tok], timeout=20)
            got = r.stdout.strip()
            want_rc = 0 if want.startswith("VALID") else 1
            if got != want or r.returncode != want_rc:
                bad += 1
                print(f"FAIL seed {seed}: token {tok[:60]}... want {want!r} rc {want_rc}, got {got!r} rc {r.returncode}")
    if bad:
        print(f"{bad}/{total} cases wrong")
        return 1
    print(f"PASS: {total} tokens judged correctly")
    return 0


sys.exit(main())
