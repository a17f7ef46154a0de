"""Checks that the original commit objects were restored as the tips of both branches."""
import subprocess
import sys

# The image builds the repository with fixed authors and dates, so these ids are reproducible.
FEATURE_TIP = "59f60e776126616d2cf7655fcee7cbf549e18e54"   # "Add TSV export"
MAIN_TIP = "ebb8f1ff03a2834334c8985c403081c2c9429033"      # "Describe the project in the README"


def git(*args):
    return subprocess.run(["git", "-C", "/app/shop", *args], capture_output=True, text=True)


subprocess.run(["git", "config", "--global", "--add", "safe.directory", "*"])
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
        if open(f"/app/shop/{path}").read() != content:
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
