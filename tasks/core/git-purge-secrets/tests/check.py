"""Rebuilds the original repository from the same deterministic script, computes the expected
rewritten history with filter-branch, and compares commit DAG signatures ref by ref."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
REPO = "/app/service"
SECRETS = [b"sk_live_4f9a8b7c6d5e3f2a", b"sk_live_rotated_77q1w2e3", b"sk_live_local_dev_key_5k8"]
LOCAL = "PAYMENT_API_KEY=sk_live_local_dev_key_5k8\n"
notes = []


def expect(cond, msg):
    if not cond:
        notes.append(msg)
        raise AssertionError(msg)


def git(repo, *a, binary=False):
    # Hardened git (no hooks, fsmonitor, global config or repository-named drivers).
    return rc.git(list(a), repo=repo, text=not binary)


def build_expected():
    ref = os.path.join(tempfile.mkdtemp(), "expected_service")  # root-only (0700)
    subprocess.run(["python3", "-I", "/tests/make_repo.py", ref], check=True, env=dict(rc.GIT_ENV, PATH=rc.CLEAN_PATH))
    env = dict(rc.GIT_ENV, PATH=rc.CLEAN_PATH, FILTER_BRANCH_SQUELCH_WARNING="1")
    subprocess.run(["git", "filter-branch", "-f", "--prune-empty", "--index-filter",
                    "git rm -q --cached --ignore-unmatch config/secrets.env assets/dump.bin",
                    "--tag-name-filter", "cat", "--", "--all"], cwd=ref, env=env, check=True, capture_output=True)
    for name in git(ref, "for-each-ref", "--format=%(refname)", "refs/original").stdout.split():
        git(ref, "update-ref", "-d", name)
    return ref


def signatures(repo):
    """sig(commit) over tree, author, author date, message and parents' sigs, for every ref."""
    memo = {}

    def sig(c):
        if c in memo:
            return memo[c]
        r = git(repo, "show", "-s", "--format=%T%n%an%n%ae%n%ad%n%P%n%B", "--date=raw", c)
        lines = r.stdout.split("\n")
        tree, an, ae, ad, parents = lines[:5]
        body = "\n".join(lines[5:]).strip()
        psigs = [sig(p) for p in parents.split()]
        memo[c] = hashlib.sha256(json.dumps([tree, an, ae, ad, body, psigs]).encode()).hexdigest()
        return memo[c]

    out = {}
    for line in git(repo, "for-each-ref", "--format=%(refname) %(objecttype) %(*objectname) %(objectname)").stdout.splitlines():
        parts = line.split()
        name, kind = parts[0], parts[1]
        target = parts[2] if kind == "tag" else parts[-1]
        out[name] = (kind, sig(target))
    return out


EXPECTED = build_expected()


def reachable_commits(repo):
    return git(repo, "rev-list", "--all").stdout.split()


def m_paths_removed():
    commits = reachable_commits(REPO)
    expect(commits, "no commits reachable")
    for c in commits:
        files = git(REPO, "ls-tree", "-r", "--name-only", c).stdout.split("\n")
        expect("config/secrets.env" not in files and "assets/dump.bin" not in files, f"commit {c[:10]} still has a purged path")


def m_main_history_preserved():
    exp, got = signatures(EXPECTED), signatures(REPO)
    expect(got.get("refs/heads/main") == exp["refs/heads/main"], "rewritten main differs from the expected history "
           "(authors, dates, messages, trees, dropped empty commits or merge structure)")


def m_branches_and_tags_rewritten():
    exp, got = signatures(EXPECTED), signatures(REPO)
    expect(set(got) == set(exp), f"refs are {sorted(got)}, expected {sorted(exp)}")
    for ref in exp:
        expect(got[ref] == exp[ref], f"{ref} does not point to the rewritten counterpart (or has the wrong kind)")
    msg = git(REPO, "cat-file", "-p", "refs/tags/v1.0").stdout
    expect(msg.rstrip().endswith("Release 1.0"), "v1.0 lost its message")


def m_objects_purged():
    r = git(REPO, "cat-file", "--batch-all-objects", "--batch", binary=True)
    expect(r.returncode == 0, "cannot list objects")
    blob = r.stdout
    for s in SECRETS:
        expect(s not in blob, f"an object still contains {s[:12].decode()}...")
    dump = subprocess.run(["git", "hash-object", "/dev/stdin"], input=build_dump(), capture_output=True).stdout.decode().strip()
    ids = git(REPO, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").stdout.split()
    expect(dump not in ids, "the dump blob is still in the object database")
    expect(not git(REPO, "for-each-ref", "refs/original", "refs/stash").stdout.strip(), "backup refs remain")
    r = git(REPO, "fsck", "--no-progress")
    expect(r.returncode == 0 and "error" not in (r.stderr + r.stdout).lower(), f"git fsck: {r.stderr[-300:]}")


def build_dump():
    data = bytearray()
    x = 12345
    for _ in range(300_000):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        data.append(x >> 16 & 0xFF)
    return bytes(data)


def m_local_config_kept():
    # Only meaningful once main has actually been rewritten.
    expect(git(REPO, "rev-list", "refs/heads/main", "--", "config/secrets.env").stdout.strip() == "",
           "main still has history touching config/secrets.env")
    path = f"{REPO}/config/secrets.env"
    try:
        local = rc.read_text(path)
    except OSError:
        local = None
    expect(local == LOCAL, "the local config/secrets.env was changed or removed")
    expect(git(REPO, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/main", "main is not checked out")
    expect(git(REPO, "status", "--porcelain", "--untracked-files=no").stdout.strip() == "", "tracked files have changes")
    expect(git(REPO, "ls-files", "config/secrets.env").stdout.strip() == "", "config/secrets.env is tracked again")


MILESTONES = [m_paths_removed, m_main_history_preserved, m_branches_and_tags_rewritten, m_objects_purged, m_local_config_kept]
result = {}
for m in MILESTONES:
    name = m.__name__[2:]
    try:
        m()
        result[name] = 1
    except Exception as e:  # noqa: BLE001
        if not isinstance(e, AssertionError):
            notes.append(f"{name}: {type(e).__name__}: {e}")
        result[name] = 0
    print(f"{name}: {'PASS' if result[name] else 'FAIL'}")
for n in notes:
    print("  note:", n[:300])
reward = int(all(result.values()))
rc.write_reward(reward, result)
sys.exit(0 if reward else 1)
