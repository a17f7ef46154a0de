import sys

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

rc.lockdown()
path = "/app/hello.txt"
try:
    content = rc.read_text(path).strip()  # as nobody: a symlink cannot point the checker elsewhere
except OSError as e:
    print(f"FAIL: cannot read {path}: {e}")
    sys.exit(1)
if content != "Hello, world!":
    print(f"FAIL: expected 'Hello, world!', found {content!r}")
    sys.exit(1)
print("PASS: greeting found")
