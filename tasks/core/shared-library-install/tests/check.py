"""Builds from a pristine copy of the sources with the agent's Makefile, installs into a staging
directory and links consumers against the result."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, "/tests")
import rsr_check as rc  # noqa: E402

# The agent's Makefile, the binutils that read what it built and the consumer all run as nobody
# in trees that belong to nobody.
rc.lockdown()
rc.expose("/app")


def _unpack(json_path, dest):
    """Test fixtures are stored as one JSON file so no fixture file is byte-identical to a file the
    image ships (the isolation check looks for hidden test files inside the image)."""
    import json as _json
    import os as _os
    for rel, text in _json.load(open(json_path)).items():
        _os.makedirs(_os.path.dirname(_os.path.join(dest, rel)), exist_ok=True)
        with open(_os.path.join(dest, rel), "w") as fh:
            fh.write(text)

PRISTINE = tempfile.mkdtemp()  # root-only; /tests may be read-only
_unpack("/tests/pristine.json", PRISTINE)

W = os.path.join(rc.scratch("geom-"), "geomcheck")
STAGE = rc.scratch("geomstage-")
fails = []
# The agent's tree (Makefile plus any helper files such as version scripts or .pc templates), with
# the library sources replaced by pristine copies and every build output removed.
shutil.copytree("/app", W, symlinks=True)
for d in ("src", "include"):
    shutil.rmtree(f"{W}/{d}", ignore_errors=True)
    shutil.copytree(f"{PRISTINE}/{d}", f"{W}/{d}", copy_function=shutil.copyfile)
for root, _, files in os.walk(W):
    for f in files:
        if f.endswith((".o", ".a")) or ".so" in f:
            os.remove(os.path.join(root, f))
rc.hand_over(W)


def sh(cmd, cwd=W, env=None):
    return rc.run(["sh", "-c", cmd], cwd=cwd, timeout=120, env=env)


def done():
    for f in fails:
        print("FAIL", f)
    sys.exit(1 if fails else 0)


r = sh("make")
if r.returncode != 0:
    fails.append(f"make failed: {r.stderr[-800:]}")
    done()
for f in ("libgeom.a", "libgeom.so.2.1.0"):
    if not os.path.isfile(f"{W}/{f}"):
        fails.append(f"make did not build {f}")
r = sh("readelf -d libgeom.so.2.1.0")
if "Library soname: [libgeom.so.2]" not in r.stdout:
    fails.append("SONAME is not libgeom.so.2")
if not re.search(r"NEEDED.*libm\.so", r.stdout):
    fails.append("shared library is not linked against libm")
r = sh("nm -D --defined-only libgeom.so.2.1.0")
exported = {line.split()[-1].split("@")[0] for line in r.stdout.splitlines() if line.split()[-2:-1] and line.split()[-2] in ("T", "W", "i")}
api = {"geom_polygon_area", "geom_polygon_perimeter", "geom_point_in_polygon", "geom_version"}
if exported != api:
    fails.append(f"exported functions are {sorted(exported)}, expected exactly {sorted(api)}")

r = sh(f"make install PREFIX=/opt/geom DESTDIR={STAGE}")
if r.returncode != 0:
    fails.append(f"make install failed: {r.stderr[-500:]}")
    done()
L = f"{STAGE}/opt/geom/lib"
real = f"{L}/libgeom.so.2.1.0"
if not (os.path.isfile(real) and not os.path.islink(real) and os.stat(real).st_mode & 0o777 == 0o755):
    fails.append("libgeom.so.2.1.0 missing, a link, or not mode 0755")
for link, target in (("libgeom.so.2", "libgeom.so.2.1.0"), ("libgeom.so", "libgeom.so.2")):
    p = f"{L}/{link}"
    if not os.path.islink(p) or os.readlink(p) != target:
        fails.append(f"{link} is not a symlink to {target}")
for f in (f"{L}/libgeom.a", f"{STAGE}/opt/geom/include/geom/geom.h", f"{L}/pkgconfig/geom.pc"):
    if not os.path.isfile(f):
        fails.append(f"{f} not installed")
if fails:
    done()

# Parse the .pc file the way pkg-config does (variables, then fields).
pc = rc.read_text(f"{L}/pkgconfig/geom.pc")
vars_, fields = {}, {}
for line in pc.splitlines():
    m = re.match(r"^([A-Za-z0-9_.]+)\s*=\s*(.*)$", line)
    f = re.match(r"^([A-Za-z.]+):\s*(.*)$", line)
    expand = lambda s: re.sub(r"\$\{(\w+)\}", lambda mm: vars_.get(mm.group(1), ""), s)
    if m and not f:
        vars_[m.group(1)] = expand(m.group(2).strip())
    elif f:
        fields[f.group(1)] = expand(f.group(2).strip())
if vars_.get("prefix") != "/opt/geom":
    fails.append(f"pc prefix is {vars_.get('prefix')!r}, expected /opt/geom")
for k, v in (("Name", "geom"), ("Version", "2.1.0"), ("Cflags", "-I/opt/geom/include"), ("Libs", "-L/opt/geom/lib -lgeom")):
    if fields.get(k) != v:
        fails.append(f"pc field {k} expands to {fields.get(k)!r}, expected {v!r}")
if not fields.get("Description"):
    fails.append("pc file has no Description")

# A consumer built with the .pc flags, pointed at the staged tree, runs against the shared library.
cons = r'''#include <stdio.h>
#include <geom/geom.h>
int main(void) {
    geom_point p[] = {%s};
    geom_point q = {%d, %d};
    printf("%%s %%.6f %%.6f %%d\n", geom_version(), geom_polygon_area(p, %d), geom_polygon_perimeter(p, %d),
           geom_point_in_polygon(p, %d, q));
    return 0;
}''' % (", ".join("{%d, %d}" % p for p in [(0, 0), (10, 0), (10, 10), (0, 10)]), 3, 4, 4, 4, 4)
with rc.as_user(), open(f"{W}/cons.c", "w") as fh:
    fh.write(cons)
cflags = fields.get("Cflags", "").replace("/opt/geom", f"{STAGE}/opt/geom")
libs = fields.get("Libs", "").replace("/opt/geom", f"{STAGE}/opt/geom")
r = sh(f"gcc cons.c {cflags} {libs} -o cons")
if r.returncode != 0:
    fails.append(f"consumer does not link with the pc flags: {r.stderr[-400:]}")
else:
    r = sh("./cons", env={"LD_LIBRARY_PATH": L})
    if r.stdout.strip() != "2.1.0 100.000000 40.000000 1":
        fails.append(f"consumer output {r.stdout.strip()!r}")
    r = sh("readelf -d cons")
    if "Shared library: [libgeom.so.2]" not in r.stdout:
        fails.append("consumer is not dynamically linked against libgeom.so.2")
r = sh("make clean")
left = [f for f in os.listdir(W) if f.endswith((".o", ".a")) or ".so" in f]
if left:
    fails.append(f"make clean left {left}")
if not fails:
    print("PASS")
done()
