import pathlib
import sys

path = pathlib.Path("/app/hello.txt")
if not path.is_file():
    print(f"FAIL: {path} does not exist")
    sys.exit(1)
content = path.read_text(errors="replace").strip()
if content != "Hello, world!":
    print(f"FAIL: expected 'Hello, world!', found {content!r}")
    sys.exit(1)
print("PASS: greeting found")
