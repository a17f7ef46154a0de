#!/bin/bash
set -e
cat > /app/jwtcheck <<'PY'
#!/usr/bin/env python3
import argparse
import base64
import binascii
import hashlib
import hmac
import json
import re
import sys

B64URL = re.compile(r"[A-Za-z0-9_-]*")


def out(msg: str, rc: int):
    print(msg)
    sys.exit(rc)


def dec(part: str) -> bytes:
    if not B64URL.fullmatch(part) or len(part) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


ap = argparse.ArgumentParser()
ap.add_argument("--key", required=True)
ap.add_argument("--now", required=True, type=int)
ap.add_argument("token")
a = ap.parse_args()
key = open(a.key, "rb").read()
parts = a.token.split(".")
if len(parts) != 3:
    out("INVALID malformed", 1)
try:
    header, payload = json.loads(dec(parts[0])), json.loads(dec(parts[1]))
    sig = dec(parts[2])
except (ValueError, binascii.Error, UnicodeDecodeError):
    out("INVALID malformed", 1)
if not isinstance(header, dict) or not isinstance(payload, dict) or not isinstance(payload.get("sub"), str):
    out("INVALID malformed", 1)
for claim in ("exp", "nbf"):
    # bool is an int subclass in Python; JSON true is not a timestamp.
    if claim in payload and (not isinstance(payload[claim], int) or isinstance(payload[claim], bool)):
        out("INVALID malformed", 1)
if header.get("alg") != "HS256":
    out("INVALID bad_alg", 1)
expect = hmac.new(key, f"{parts[0]}.{parts[1]}".encode("ascii"), hashlib.sha256).digest()
if not hmac.compare_digest(expect, sig):
    out("INVALID bad_signature", 1)
if "exp" in payload and a.now >= payload["exp"]:
    out("INVALID expired", 1)
if "nbf" in payload and a.now < payload["nbf"]:
    out("INVALID not_yet_valid", 1)
out(f"VALID {payload['sub']}", 0)
PY
chmod +x /app/jwtcheck
