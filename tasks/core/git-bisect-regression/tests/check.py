"""Checks the reported culprit, that main gained exactly one clean revert of it, and that the
tests pass on the new main."""
import os
import sys
import tempfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
rc.expose("/app")
# The image builds the history with fixed dates and authors, so these ids are reproducible.
CULPRIT = "66555c52c62ab9610acbdc58574842aa6c88fb20"   # "Simplify to_cents" (commit 41)
ORIG_TIP = "92c3dce233827dbc3784517e48f563eec73826eb"
REPO = "/app/ledger"
fails = []


def git(*a, repo=REPO):
    # Hardened git (no hooks, fsmonitor, global config or repository-named drivers).
    return rc.git(list(a), repo=repo)


try:
    reported = rc.read_text("/app/first_bad_commit.txt").strip()
except OSError:
    reported = ""
if reported != CULPRIT:
    fails.append(f"/app/first_bad_commit.txt says {reported[:60]!r}, which is not the first bad commit")

head = git("rev-parse", "refs/heads/main").stdout.strip()
parent = git("rev-parse", "refs/heads/main^").stdout.strip()
if parent != ORIG_TIP:
    fails.append("main is not exactly one new commit on top of the original main")
msg = git("log", "-1", "--format=%s", "refs/heads/main").stdout.strip()
if msg != 'Revert "Simplify to_cents"':
    fails.append(f"new commit message is {msg!r}, expected git revert's default")
# Expected tree: the original tip with the culprit reverted, in a root-only clone.
ref = os.path.join(tempfile.mkdtemp(), "ledger_ref")
git("clone", "-q", "--no-checkout", "--no-hardlinks", REPO, ref, repo="/tmp")  # hardlinks: its writes would touch the agent's objects
git("checkout", "-q", ORIG_TIP, repo=ref)
r = git("-c", "user.name=t", "-c", "user.email=t@t", "revert", "--no-edit", CULPRIT, repo=ref)
exp_tree = git("rev-parse", "HEAD^{tree}", repo=ref).stdout.strip()
got_tree = git("rev-parse", "refs/heads/main^{tree}").stdout.strip()
if r.returncode != 0 or not exp_tree or got_tree != exp_tree:
    fails.append("the new commit's content is not exactly the revert of the first bad commit")
if git("symbolic-ref", "-q", "HEAD").stdout.strip() != "refs/heads/main":
    fails.append("main is not checked out")
if git("status", "--porcelain", "--untracked-files=no").stdout.strip():
    fails.append("working tree has uncommitted changes")
if os.path.exists(f"{REPO}/.git/BISECT_LOG") or os.path.exists(f"{REPO}/.git/BISECT_START"):
    fails.append("a bisect session is still in progress")
# Tests pass on a clean export of the new main: the project's code runs as nobody.
head_dir = rc.scratch("ledger-head-")
archive = rc.git(["archive", "refs/heads/main"], repo=REPO, text=False)
rc.run(["tar", "-x", "-C", head_dir], input=archive.stdout, text=False, timeout=60)
try:
    r = rc.run(["python3", "-m", "unittest", "discover", "-s", "tests"], cwd=head_dir, timeout=60)
    if r.returncode != 0:
        fails.append(f"unit tests fail on the new main: {r.stderr[-400:]}")
except Exception as e:  # noqa: BLE001 - a timeout is a failure
    fails.append(f"unit tests did not finish on the new main: {e}")
for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
