"""Checks that the original commit objects were restored as the tips of both branches."""
import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
# The image builds the repository with fixed authors and dates, so these ids are reproducible.
FEATURE_TIP = "59f60e776126616d2cf7655fcee7cbf549e18e54"   # "Add TSV export"
MAIN_TIP = "ebb8f1ff03a2834334c8985c403081c2c9429033"      # "Describe the project in the README"


def git(*args):
    # Hardened git (no hooks, fsmonitor, global config or repository-named drivers).
    return rc.git(list(args), repo="/app/shop")


fails = []
r = git("rev-parse", "--verify", "-q", "refs/heads/feature/report-export")
if r.stdout.strip() != FEATURE_TIP:
    fails.append(f"feature/report-export is {r.stdout.strip() or 'missing'}, expected the deleted tip")
r = git("rev-parse", "--verify", "-q", "refs/heads/main")
if r.stdout.strip() != MAIN_TIP:
    fails.append(f"main is {r.stdout.strip() or 'missing'}, expected its pre-reset commit")
r = git("symbolic-ref", "-q", "HEAD")
if r.stdout.strip() != "refs/heads/main":
    fails.append(f"HEAD is {r.stdout.strip() or 'detached'}, expected main checked out")
r = git("status", "--porcelain", "--untracked-files=no")
if r.returncode != 0 or r.stdout.strip():
    fails.append(f"working tree not clean: {r.stdout.strip()[:300]}")
want = {"README.md": "# Shop\n\nBilling and reporting helpers.\n"}
for path, content in want.items():
    try:
        if rc.read_text(f"/app/shop/{path}") != content:
            fails.append(f"{path} in the working tree does not match main")
    except OSError:
        fails.append(f"{path} missing from the working tree")
r = git("show", f"{FEATURE_TIP}:export.py")
if "def export_tsv" not in r.stdout:
    fails.append("feature tip does not contain the TSV export")
for f in fails:
    print("FAIL", f)
if fails:
    sys.exit(1)
print("PASS")
