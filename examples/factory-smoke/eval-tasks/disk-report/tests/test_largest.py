import os
import random
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")

SCRIPT = "/app/largest.sh"


def build_tree(root: str, rng: random.Random) -> None:
    dirs = [root]
    for i in range(rng.randint(4, 8)):
        parent = rng.choice(dirs)
        name = rng.choice(["d", "dir with space", ".hidden", "sub"]) + str(i)
        path = os.path.join(parent, name)
        os.makedirs(path, exist_ok=True)
        dirs.append(path)
    sizes = [0, 1, 512, 4096, 4096, 10000, 123456, 77, 77, 77]
    for i in range(rng.randint(15, 30)):
        d = rng.choice(dirs)
        name = rng.choice(["f", "file ", ".dot", "a", "Z"]) + str(i) + rng.choice(["", ".log", ".bin"])
        with open(os.path.join(d, name), "wb") as f:
            f.write(b"x" * rng.choice(sizes + [rng.randint(0, 200000)]))
    # A huge file reached only through a symlink must not appear, nor the link itself.
    outside = rc.scratch("outside-")
    big = os.path.join(outside, "huge.bin")
    with open(big, "wb") as f:
        f.write(b"y" * 500000)
    rc.hand_over(outside)
    os.symlink(big, os.path.join(root, "link-to-huge"))
    os.symlink(outside, os.path.join(root, "linked-dir"))
    os.mkfifo(os.path.join(root, "a-fifo"))


def reference(root: str, n: int) -> str:
    rows = []
    for dirpath, dirnames, filenames in os.walk(root):
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            rel = os.path.relpath(p, root)
            rows.append((os.path.getsize(p), rel))
    rows.sort(key=lambda r: (-r[0], r[1].encode()))
    return "".join(f"{s}\t{p}\n" for s, p in rows[:n])


def main() -> int:
    if not os.access(SCRIPT, os.X_OK):
        print(f"FAIL: {SCRIPT} missing or not executable")
        return 1
    failures = 0
    for seed in range(6):
        rng = random.Random(1000 + seed)
        root = rc.scratch("tree-")
        build_tree(root, rng)
        rc.hand_over(root)
        for n in (1, 5, 1000):
            want = reference(root, n)
            r = rc.run([SCRIPT, root, str(n)], timeout=30)
            if r.returncode != 0 or r.stdout != want:
                failures += 1
                print(f"FAIL seed={seed} n={n} rc={r.returncode}\nwant:\n{want}\ngot:\n{r.stdout}\nstderr:{r.stderr}")
    if failures:
        return 1
    print("PASS: all listings match")
    return 0


sys.exit(main())
