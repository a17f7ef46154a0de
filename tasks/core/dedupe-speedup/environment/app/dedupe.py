"""De-duplicate customer records by e-mail address.

usage: python3 dedupe.py INPUT.csv OUTPUT.csv

Keeps the first record for every normalised address, in input order, and prints
"kept=<n> dropped=<m>" on standard output.
"""
import csv
import sys


def normalise(email):
    """Case-insensitive; ignores surrounding spaces and a "+tag" in the local part."""
    email = email.strip().lower()
    local, _, domain = email.partition("@")
    local = local.split("+", 1)[0]
    return local + "@" + domain


def main(src, dst):
    with open(src, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = list(reader)
    seen = []
    kept = []
    dropped = 0
    for row in rows:
        key = normalise(row["email"])
        if key in seen:
            dropped += 1
            continue
        seen.append(key)
        kept = kept + [row]
    with open(dst, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for row in kept:
            writer.writerow(row)
    print(f"kept={len(kept)} dropped={dropped}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
