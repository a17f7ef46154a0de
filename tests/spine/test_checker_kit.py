"""rsr_check, the checker kit task tests share: every task holds it verbatim, the scaffold copies
it, and in real sandboxes it keeps the deliverable away from the tests while the quality gate's
leak probe catches a checker that hands its answer out."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskfactory import harbor_task

from rsr.suites.check import check_tasks, leak_findings, probe_report
from rsr.suites.registry import REPO_ROOT
from rsr.tasks.kit.rsr_check import PROBE_MARKER
from rsr.tasks.load import load_dataset, load_task
from rsr.tasks.scaffold import checker_kit, scaffold_task

KIT = REPO_ROOT / "rsr/tasks/kit/rsr_check.py"
SHARED_LAYER = (REPO_ROOT / "tasks/core/hello-world/environment/Dockerfile").read_text()


def rsr_task_dirs() -> list[Path]:
    return [t.paths.task_dir for suite in ("tasks/core", "tasks/live")
            for t in load_dataset(REPO_ROOT / suite).tasks]


def test_every_core_and_live_task_holds_the_kit_verbatim() -> None:
    kit = KIT.read_bytes()
    dirs = rsr_task_dirs()
    assert len(dirs) >= 42
    differ = [str(d) for d in dirs if (d / "tests" / "rsr_check.py").read_bytes() != kit]
    assert not differ, f"copy rsr/tasks/kit/rsr_check.py into: {differ}"


def test_every_core_checker_runs_isolated_python_through_the_kit() -> None:
    for d in rsr_task_dirs():
        test_sh = (d / "tests" / "test.sh").read_text()
        assert "python3 -I /tests/" in test_sh and "python3 /tests/" not in test_sh, d
        checkers = [p for p in (d / "tests").glob("*.py") if "rc.lockdown()" in p.read_text()]
        assert checkers, f"{d}: no checker calls rc.lockdown()"


def test_scaffold_copies_the_kit_and_uses_it(tmp_path: Path) -> None:
    d = scaffold_task(tmp_path, "kit-user", milestones=True)
    assert (d / "tests" / "rsr_check.py").read_text() == checker_kit() == KIT.read_text()
    assert "rc.run(" in (d / "tests" / "test_outputs.py").read_text()
    assert load_task(d).config.verifier.allow_changes == []


def test_probe_report_reads_the_last_marker_line() -> None:
    first, last = '{"probes": 1, "findings": ["a"]}', '{"probes": 2, "findings": []}'
    out = f"noise\n{PROBE_MARKER}{first}\nmore\n{PROBE_MARKER}{last}\n"
    assert probe_report(out) == {"probes": 2, "findings": []}
    assert probe_report("no marker here") is None


def test_leak_findings_warn_on_tasks_without_the_kit_and_fail_a_silent_one(tmp_path: Path) -> None:
    plain = load_task(harbor_task(tmp_path, "plain"))
    found, warned = leak_findings(plain, None)
    assert not found and "do not use rsr_check" in warned[0]
    kitted = harbor_task(tmp_path, "kitted", extra={"tests/rsr_check.py": KIT.read_text()})
    found, _ = leak_findings(load_task(kitted), None)
    assert found and "did not report" in found[0]
    # Reduced mode: /tests is readable by a root deliverable by design (a warning); the checker's
    # own process never is (a finding).
    found, warned = leak_findings(load_task(kitted), {"probes": 1, "mode": "root", "findings": [
        "readable: /tests/check.py", "checker process readable: /proc/7/environ"]})
    assert found == ["deliverable could read: checker process readable: /proc/7/environ"]
    assert "/tests/check.py" in warned[0]


CLEAN_CHECK = r'''
import os, subprocess, sys
sys.path.insert(0, "/tests")
import rsr_check as rc
# Older than lockdown, like a runner's keep-alive (Harbor's pid 1 is `sh -c "sleep infinity"`:
# killing its child ends the container): the reduced-mode sweep must leave it.
keeper = subprocess.Popen(["sleep", "300"])
rc.lockdown()
rc.expose("/app")
fails = []
r = rc.run(["/app/prog"], timeout=30)
if r.stdout.split() != ["uid=65534", "tests=denied", "logs=denied", "home=ok"]:
    fails.append(f"deliverable saw {r.stdout.split()} {r.stderr[-200:]}")
try:
    if rc.call_python("import lib\nresult = lib.double(args)", 21) != 42:
        fails.append("call_python result")
except Exception as e:
    fails.append(f"call_python: {e}")
d = rc.scratch()
os.symlink("/tests/check.py", d + "/out")
try:
    rc.read_text(d + "/out")
    fails.append("read_text followed a planted symlink into /tests")
except PermissionError:
    pass
me = os.getpid()
r = rc.run(["sh", "-c", f"cat /proc/{me}/environ >/dev/null 2>&1 && echo readable || echo closed"], root=True)
if r.stdout.strip() != "closed":
    fails.append(f"a reduced-mode deliverable read the checker's environ: {r.stdout!r}")
r = rc.run(["sh", "-c", "setsid sleep 301 </dev/null >/dev/null 2>&1 & echo $!"], root=True)
try:
    with open(f"/proc/{int(r.stdout)}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
except (OSError, ValueError):
    state = "gone"
if state not in ("gone", "Z"):
    fails.append(f"a reduced-mode deliverable's own-session process survived the sweep ({state})")
if keeper.poll() is not None:
    fails.append("the reduced-mode sweep killed a process older than lockdown")
keeper.kill()
st = rc.git(["status", "--porcelain"], repo="/app/repo")
for marker in ("/tmp/fsmonitor-ran", "/tmp/filter-ran", "/tmp/hook-ran"):
    if os.path.exists(marker):
        fails.append(f"git ran the repository's {marker}")
if st.returncode != 0:
    fails.append(f"git status failed: {st.stderr}")
print(fails)
rc.write_reward(0 if fails else 1)
'''

CLEAN_SOLVE = r'''#!/bin/bash
set -e
cat > /app/prog <<'SH'
#!/bin/sh
echo "uid=$(id -u)"
if cat /tests/check.py >/dev/null 2>&1; then echo tests=readable; else echo tests=denied; fi
if ls /logs/verifier >/dev/null 2>&1; then echo logs=readable; else echo logs=denied; fi
if touch "$HOME/x"; then echo home=ok; else echo home=no; fi
SH
chmod +x /app/prog
printf 'def double(x):\n    return 2 * x\n' > /app/lib.py
git init -q /app/repo && cd /app/repo
echo a > a.txt && git add a.txt && git -c user.name=a -c user.email=a@a commit -qm one
printf '#!/bin/sh\ntouch /tmp/fsmonitor-ran\n' > /app/fsmon && chmod +x /app/fsmon
printf '#!/bin/sh\ntouch /tmp/hook-ran\n' > .git/hooks/post-index-change && chmod +x .git/hooks/post-index-change
git config core.fsmonitor /app/fsmon
git config filter.evil.clean "sh -c 'touch /tmp/filter-ran; cat'"
echo '* filter=evil' > .gitattributes
touch -d '2001-01-01' a.txt
'''

LEAKY_CHECK = r'''
import os, sys
sys.path.insert(0, "/tests")
import rsr_check as rc
rc.lockdown()
with open("/tmp/answer.txt", "w") as f:
    f.write("42\n")
os.chmod("/tmp/answer.txt", 0o644)  # the mistake the probe must catch
r = rc.run(["cat", "/tmp/answer.txt"])
rc.write_reward(1 if r.stdout.strip() == "42" else 0)
'''


def kit_task(root: Path, name: str, check: str, solve: str) -> Path:
    return harbor_task(root, name, dockerfile=SHARED_LAYER, solve_sh=solve,
                       test_sh="mkdir -p /logs/verifier\npython3 -I /tests/check.py\n",
                       extra={"tests/check.py": check, "tests/rsr_check.py": KIT.read_text()})


@pytest.mark.docker
def test_leak_probe_passes_the_kit_and_fails_a_checker_that_hands_out_its_answer(tmp_path: Path) -> None:
    kit_task(tmp_path, "kit-clean", CLEAN_CHECK, CLEAN_SOLVE)
    kit_task(tmp_path, "kit-leaky", LEAKY_CHECK, "#!/bin/bash\ntrue\n")
    harbor_task(tmp_path, "kit-none")
    reports = {r.name: r for r in check_tasks(str(tmp_path), checks=("oracle", "null", "leak"), runs=1,
                                              log_dir=str(tmp_path / "logs"))}
    clean = reports["kit-clean"]
    assert clean.oracle_passes == [True] and clean.null_passed is False, clean.to_dict()
    assert clean.ok and clean.leak_probe and clean.leak_probe["probes"] >= 1, clean.to_dict()
    leaky = reports["kit-leaky"]
    assert any("/tmp/answer.txt" in f for f in leaky.findings), leaky.to_dict()
    none = reports["kit-none"]
    assert none.ok and any("do not use rsr_check" in w for w in none.warnings), none.to_dict()


@pytest.mark.docker
def test_tasks_check_does_print_what_the_leak_and_isolation_probes_saw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A clean result used to print only "-" and "ok": the findings were in --json-out alone.
    from rsr.cli.main import main

    rc = main(["tasks", "check", "core", "--only", "leak,isolation", "--runs", "1", "--tasks", "hello-world",
               "--log-dir", str(tmp_path / "logs")])
    out = " ".join(capsys.readouterr().out.split())
    assert rc in (0, None), out
    assert ("hello-world: isolation: /tests and /solution not visible to the agent; no test file in the "
            "image; network interfaces: lo") in out, out
    assert "hello-world: leak: " in out and "run as the deliverable (nobody, unprivileged): read neither the " \
        "tests nor the checker's expected outputs" in out, out
