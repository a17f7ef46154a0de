"""Differential test against Harbor 0.26, the reference runner: the same tasks, Harbor's oracle and
ours, compared per task on the reward and on what a probe sees inside the sandbox (user, working
directory, environment variables, mounts, visible hidden files, CPU and memory limits, network).

Harbor runs on a copy of each task with the workaround of `../shared/notes/harbor-here.md`: this
engine has no bridge network, so Harbor's copy gets `allow_internet = true` and host networking
(builds included). The network is therefore the one probe field expected to differ (rsr: loopback
only, Harbor: the host's interfaces); nothing in these tasks uses it. Every other difference must be
listed in KNOWN_DIFFERENCES with its reason, or the test fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from harbor_ref import harbor_home
from inspect_ai import eval as inspect_eval
from taskfactory import BASE_DOCKERFILE, PONG_SERVER, harbor_task

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
# Every core task, derived from the tree so that none can drop out of the comparison unnoticed.
CORE_TASKS = tuple(sorted(d.name for d in (REPO / "tasks" / "core").iterdir() if (d / "task.toml").is_file()))
# Harbor's trial concurrency; a shared or smaller machine passes a lower one.
HARBOR_CONCURRENCY = os.environ.get("RSR_HARBOR_CONCURRENCY", "4")

PROBE_FN = r"""
rsr_probe() {
  echo "RSR-PROBE-BEGIN $1"
  echo "user=$(id -un):$(id -u)"
  echo "pwd=$(pwd)"
  echo "net=$(ls /sys/class/net | sort | tr '\n' ' ')"
  if [ -f /sys/fs/cgroup/cpu.max ]; then echo "cpu=$(cat /sys/fs/cgroup/cpu.max)";
  else echo "cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"; fi
  if [ -f /sys/fs/cgroup/memory.max ]; then echo "mem=$(cat /sys/fs/cgroup/memory.max)";
  else echo "mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"; fi
  echo "mounts=$(awk '$2 ~ "^/(app|logs|tests|solution)" {print $2}' /proc/mounts | sort | tr '\n' ' ')"
  echo "tests=$(ls -A /tests 2>/dev/null | sort | tr '\n' ' ')"
  echo "solution=$(ls -A /solution 2>/dev/null | sort | tr '\n' ' ')"
  echo "logs=$(ls -A /logs 2>/dev/null | sort | tr '\n' ' ')"
  env | sort | grep -E '^(PATH|HOME|TEST_DIR|PROBE_[A-Z_]+)=' | sed 's/^/env./'
  echo "RSR-PROBE-END $1"
}
"""

PROBE_TOML = """
schema_version = "1.1"
[task]
name = "parity/{name}"
[verifier]
timeout_sec = 60
[verifier.env]
PROBE_VERIFIER = "from-verifier"
[agent]
timeout_sec = 120
{agent_user}
[environment]
cpus = 1
memory_mb = 512
allow_internet = false
workdir = "/app"
[environment.env]
PROBE_TASK = "from-task"
PROBE_DEFAULTED = "${{RSR_PARITY_UNSET:-fallback}}"
[solution.env]
PROBE_SOLUTION = "from-solution"
"""

SIDECAR_COMPOSE = f"""
services:
  main:
    image: ${{MAIN_IMAGE_NAME}}
    depends_on: [cache]
    environment:
      PROBE_CACHE: cache
    deploy:
      resources:
        limits:
          cpus: ${{CPUS}}
          memory: ${{MEMORY}}
  cache:
    image: ${{MAIN_IMAGE_NAME}}
    command: ["sh", "-c", {json.dumps(PONG_SERVER.replace("8080", "18080"))}]
"""

KNOWN_DIFFERENCES: dict[str, str] = {
    "net": "Harbor's copy runs with host networking on this engine (no bridge); rsr's sandbox has only lo",
    "verifier.solution": "rsr's oracle removes /solution once solve.sh is done; Harbor's leaves it for the "
                         "verifier (only oracle runs ever have it)",
    "verifier.mounts": "rsr verifies in a snapshot of the agent's container where /tests and /logs/verifier are "
                       "per-sample host directories the verifier mounts (README: Verifier); Harbor copies the "
                       "tests into the agent's own container",
}

# Multi-step trials whose mean rsr takes over every declared step (invariant 5, README: Verifier):
# Harbor leaves a step without rewards, or one never reached, out of the mean. The per-step
# rewards must still agree; the trial's are checked against rsr's own rule below.
MEAN_OVER_DECLARED_STEPS = {"steps-gated", "steps-setup"}


def _solve(extra: str = "") -> str:
    return PROBE_FN + "rsr_probe agent > /tmp/agent-probe.txt\n" + extra


def _test(reward: str = "echo 1 > /logs/verifier/reward.txt", extra: str = "") -> str:
    return (PROBE_FN + "cat /tmp/agent-probe.txt\nrsr_probe verifier\n" + extra + "mkdir -p /logs/verifier\n"
            + reward + "\n")


def synthetic_tasks(root: Path) -> list[str]:
    harbor_task(root, "probe", toml=PROBE_TOML.format(name="probe", agent_user=""), solve_sh=_solve(),
                test_sh=_test())
    harbor_task(root, "probe-user", toml=PROBE_TOML.format(name="probe-user", agent_user='user = "nobody"'),
                solve_sh=_solve(), test_sh=_test())
    ask = "exec 3<>/dev/tcp/cache/18080 && head -1 <&3 > /tmp/pong || true\n"
    harbor_task(root, "sidecar", toml=PROBE_TOML.format(name="sidecar", agent_user=""),
                solve_sh=_solve("sleep 1\n" + ask),
                test_sh=_test(reward="if grep -qx pong /tmp/pong; then echo 1; else echo 0; fi "
                                     "> /logs/verifier/reward.txt"),
                extra={"environment/docker-compose.yaml": SIDECAR_COMPOSE})
    milestones = PROBE_TOML.format(name="milestones", agent_user="").replace(
        "[verifier]", "[metadata]\nmilestones = [\"milestone_write\", \"milestone_sort\"]\n[verifier]")
    harbor_task(root, "milestones", toml=milestones, solve_sh=_solve("echo b a > /app/words\n"),
                test_sh=_test(reward=(
                    'w=$(grep -c . /app/words 2>/dev/null || echo 0); s=0; [ "$(cat /app/words)" = "a b" ] && s=1; '
                    'echo "{\\"reward\\": $s, \\"milestone_write\\": $([ $w -gt 0 ] && echo 1 || echo 0), '
                    '\\"milestone_sort\\": $s}" > /logs/verifier/reward.json')))
    # Ready only on the third try: the agent must start after the healthcheck passed, not before.
    healthy = PROBE_TOML.format(name="healthcheck", agent_user="") + (
        '[environment.healthcheck]\ncommand = "n=$(cat /tmp/hc 2>/dev/null || echo 0); echo $((n+1)) > /tmp/hc; '
        '[ $n -ge 2 ]"\ninterval_sec = 0.2\nretries = 5\n')
    harbor_task(root, "healthcheck", toml=healthy, solve_sh=_solve("cp /tmp/hc /app/hc-at-start\n"),
                test_sh=_test(reward='if [ "$(cat /app/hc-at-start)" = 3 ]; then echo 1; else echo 0; fi '
                                     '> /logs/verifier/reward.txt'))
    # A separate verifier: the tests pass only in a fresh container (the agent's file must not be
    # there) that received the agent's artifacts.
    harbor_task(root, "separate-verifier",
                toml=SIMPLE_TOML.format(name="separate-verifier", top="", verifier='environment_mode = "separate"'),
                solve_sh="echo done > /app/out.txt\nmkdir -p /logs/artifacts && echo art > /logs/artifacts/r.txt\n",
                test_sh='if [ -e /app/out.txt ]; then echo 0; elif [ "$(cat /logs/artifacts/r.txt)" = art ]; '
                        "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    return ["probe", "probe-user", "sidecar", "milestones", "healthcheck", "separate-verifier"]


SIMPLE_TOML = """
schema_version = "1.4"
{top}
[task]
name = "parity/{name}"
[verifier]
timeout_sec = 60
{verifier}
[environment]
cpus = 1
memory_mb = 512
allow_internet = false
workdir = "/app"
"""


def unsupported_tasks(root: Path) -> dict[str, str]:
    """Tasks using Harbor features rsr does not run yet: Harbor must pass them, rsr must differ, and
    lint must say so. When rsr learns a feature, its task moves to the agreeing set (none left)."""
    return {}


STEP_REWARD = "if [ -e /app/{a} ] && [ -e /app/{b} ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"


def multi_step_tasks(root: Path) -> list[str]:
    """Multi-step tasks and artifacts, run under both runners with the oracle and the null agent;
    rewards must agree per step and per trial, and the collected artifacts file by file."""
    steps = '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n'
    toml = SIMPLE_TOML.format(name="two-steps", top='multi_step_reward_strategy = "final"', verifier="") + steps
    d = harbor_task(root, "two-steps", toml=toml, test_sh=STEP_REWARD.format(a="one", b="two"),
                    extra={"steps/one/instruction.md": "Create /app/one.\n",
                           "steps/one/solution/solve.sh": "touch /app/one\n",
                           "steps/two/instruction.md": "Create /app/two.\n",
                           "steps/two/solution/solve.sh": "touch /app/two\n"})
    shutil.rmtree(d / "solution")
    (d / "instruction.md").unlink()
    # Mean of per-step rewards with a key only one step writes, a workdir with setup.sh, the
    # step's own tests over the shared ones, a step timeout, and a min_reward gate that stops
    # the trial before step "c" (the oracle's step b is only half right).
    gated = SIMPLE_TOML.format(name="steps-gated", top="", verifier="") + (
        '[[steps]]\nname = "a"\n[steps.agent]\ntimeout_sec = 30\n'
        '[[steps]]\nname = "b"\nmin_reward = { reward = 1.0 }\n'
        '[[steps]]\nname = "c"\n')
    d = harbor_task(root, "steps-gated", toml=gated, test_sh="echo 0 > /logs/verifier/reward.txt\n", extra={
        "steps/a/instruction.md": "Copy seed.txt to a.txt.\n",
        "steps/a/workdir/seed.txt": "seeded\n",
        "steps/a/workdir/setup.sh": "cat seed.txt seed.txt > /app/double.txt\n",
        "steps/a/solution/solve.sh": "cp /app/seed.txt /app/a.txt\n",
        "steps/a/tests/test.sh": 'if [ "$(cat /app/a.txt)" = seeded ] && [ "$(wc -l < /app/double.txt)" = 2 ]; '
                                 "then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
        "steps/b/instruction.md": "Write b.txt.\n",
        "steps/b/solution/solve.sh": "echo half > /app/b.txt\n",
        "steps/b/tests/test.sh": 'e=0; [ -e /app/b.txt ] && e=1; r=0; grep -qx half /app/b.txt 2>/dev/null && r=0.5; '
                                 'echo "{\\"reward\\": $r, \\"exists\\": $e}" > /logs/verifier/reward.json\n',
        "steps/c/instruction.md": "Write c.txt.\n",
        "steps/c/solution/solve.sh": "touch /app/c.txt\n",
        "steps/c/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n"})
    shutil.rmtree(d / "solution")
    (d / "instruction.md").unlink()
    # A step whose tests write no reward: Harbor's verifier raises, the trial stops there and
    # has no rewards at all (mean over no step).
    broken = SIMPLE_TOML.format(name="steps-no-reward", top="", verifier="") + steps
    d = harbor_task(root, "steps-no-reward", toml=broken, test_sh="echo 1 > /logs/verifier/reward.txt\n", extra={
        "steps/one/instruction.md": "Do nothing.\n",
        "steps/one/tests/test.sh": "echo no reward here\n",
        "steps/two/instruction.md": "Do nothing again.\n"})
    (d / "instruction.md").unlink()
    # Artifacts and collect hooks (single step): a file, a directory with an exclusion and a
    # destination, the publish dir, a hook's output, and one that is never produced.
    arts = SIMPLE_TOML.format(name="artifacts", top=(
        'artifacts = ["/app/report.txt", { source = "/app/outdir", destination = "out", exclude = ["*.tmp"] }, '
        '"/app/missing.txt"]'), verifier='[[verifier.collect]]\ncommand = "echo hooked > /app/outdir/hook.txt"')
    harbor_task(root, "artifacts", toml=arts,
                solve_sh="echo report > /app/report.txt\nmkdir -p /app/outdir /logs/artifacts\n"
                         "echo keep > /app/outdir/keep.txt\necho drop > /app/outdir/x.tmp\n"
                         "echo pub > /logs/artifacts/pub.txt\n",
                test_sh='if [ "$(cat /app/outdir/hook.txt)" = hooked ]; then echo 1; else echo 0; fi '
                        "> /logs/verifier/reward.txt\n")
    # MCP servers as the task declares them: a stdio one (a command in the image the agent runs)
    # and a streamable-HTTP one served by a sidecar. The oracle calls each server's tool.
    mcp = SIMPLE_TOML.format(name="mcp", top="", verifier="") + (
        '[[environment.mcp_servers]]\nname = "notes-stdio"\ntransport = "stdio"\ncommand = "/usr/local/bin/notes-mcp"\n'
        '[[environment.mcp_servers]]\nname = "notes-http"\ntransport = "streamable-http"\n'
        'url = "http://notes:18081/mcp"\n')
    harbor_task(root, "mcp", toml=mcp, dockerfile=BASE_DOCKERFILE + "COPY notes-mcp /usr/local/bin/notes-mcp\n",
                solve_sh=MCP_CLIENT, test_sh='if [ "$(cat /app/stdio.txt)" = stdio-secret ] && '
                                             '[ "$(cat /app/http.txt)" = http-secret ]; then echo 1; else echo 0; fi '
                                             "> /logs/verifier/reward.txt\n",
                extra={"environment/notes-mcp": MCP_SERVER, "environment/docker-compose.yaml": MCP_COMPOSE})
    (root / "mcp" / "environment" / "notes-mcp").chmod(0o755)
    # A separate verifier receives the artifacts at their own source paths (no translation).
    apart = SIMPLE_TOML.format(name="separate-artifacts", top=(
        'artifacts = ["/app/result.txt", { source = "/app/dir", destination = "elsewhere", exclude = ["*.tmp"] }]'),
        verifier='environment_mode = "separate"')
    harbor_task(root, "separate-artifacts", toml=apart,
                solve_sh="echo r > /app/result.txt\nmkdir -p /app/dir /logs/artifacts\necho k > /app/dir/keep.txt\n"
                         "echo t > /app/dir/x.tmp\necho p > /logs/artifacts/pub.txt\n",
                test_sh='if [ "$(cat /app/result.txt)" = r ] && [ -f /app/dir/keep.txt ] && [ ! -e /app/dir/x.tmp ] '
                        '&& [ "$(cat /logs/artifacts/pub.txt)" = p ]; then echo 1; else echo 0; fi '
                        "> /logs/verifier/reward.txt\n")
    # A step verified in a separate environment: a fresh container that receives the step's
    # artifacts (and the publish dir), after a step verified on the agent's filesystem.
    mixed = SIMPLE_TOML.format(name="steps-separate", top="", verifier="") + (
        '[[steps]]\nname = "build"\n[[steps]]\nname = "check"\nartifacts = ["/app/made.txt"]\n'
        '[steps.verifier]\nenvironment_mode = "separate"\n')
    d = harbor_task(root, "steps-separate", toml=mixed,
                    test_sh='if [ "$(cat /app/made.txt)" = made ]; then echo 1; else echo 0; fi '
                            "> /logs/verifier/reward.txt\n", extra={
        "steps/build/instruction.md": "Make /app/made.txt.\n",
        "steps/build/solution/solve.sh": "echo made > /app/made.txt\necho scratch > /app/scratch.txt\n",
        "steps/check/instruction.md": "Publish a note.\n",
        "steps/check/solution/solve.sh": "mkdir -p /logs/artifacts && echo checked > /logs/artifacts/note.txt\n",
        "steps/check/tests/test.sh": 'if [ "$(cat /app/made.txt)" = made ] && [ ! -e /app/scratch.txt ] && '
                                     '[ "$(cat /logs/artifacts/note.txt)" = checked ]; then echo 1; else echo 0; fi '
                                     "> /logs/verifier/reward.txt\n"})
    shutil.rmtree(d / "solution")
    (d / "instruction.md").unlink()
    # A step's setup.sh readies what its healthcheck waits for; the next step's setup fails, so the
    # trial stops there and the mean is over the one step that has rewards.
    setup = SIMPLE_TOML.format(name="steps-setup", top="", verifier="") + (
        '[[steps]]\nname = "ready"\n[steps.healthcheck]\ncommand = "test -f /app/ready"\ninterval_sec = 0.2\n'
        '[[steps]]\nname = "broken"\n')
    d = harbor_task(root, "steps-setup", toml=setup,
                    test_sh="if [ -e /app/ok ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n", extra={
        "steps/ready/instruction.md": "Write /app/ok.\n",
        "steps/ready/workdir/setup.sh": "touch /app/ready\n",
        "steps/ready/solution/solve.sh": "touch /app/ok\n",
        "steps/broken/instruction.md": "Never seen.\n",
        "steps/broken/workdir/setup.sh": "exit 3\n",
        "steps/broken/solution/solve.sh": "touch /app/never\n"})
    shutil.rmtree(d / "solution")
    (d / "instruction.md").unlink()
    return ["two-steps", "steps-gated", "steps-no-reward", "artifacts", "mcp", "separate-artifacts", "steps-separate",
            "steps-setup"]


# A minimal MCP server (JSON-RPC 2.0, one tool) in the perl of a slim Debian image, and a client
# that calls its tool over both transports (the oracle's solution).
MCP_SERVER = (Path(__file__).parent / "mcp" / "notes-mcp").read_text()
MCP_CLIENT = (Path(__file__).parent / "mcp" / "client.sh").read_text()

MCP_COMPOSE = """
services:
  main:
    image: ${MAIN_IMAGE_NAME}
    depends_on: [notes]
    deploy:
      resources:
        limits:
          cpus: ${CPUS}
          memory: ${MEMORY}
  notes:
    image: ${MAIN_IMAGE_NAME}
    command: ["perl", "/usr/local/bin/notes-mcp", "--http", "18081"]
"""


def harbor_copy(task_dir: Path, dest: Path) -> Path:
    """The harbor-here.md workaround: internet on (Harbor refuses no-network here) and host
    networking for every service and for the build; containers stopped without a grace period."""
    copy = dest / task_dir.name
    shutil.copytree(task_dir, copy)
    toml_path = copy / "task.toml"
    text = toml_path.read_text()
    text = re.sub(r"(?m)^allow_internet\s*=.*$", "allow_internet = true", text)
    if "allow_internet" not in text:
        text = text.replace("[environment]", "[environment]\nallow_internet = true", 1)
    toml_path.write_text(text)
    compose_path = copy / "environment" / "docker-compose.yaml"
    doc = yaml.safe_load(compose_path.read_text()) if compose_path.is_file() else {"services": {}}
    services = doc["services"]
    main = services.setdefault("main", {})
    main["build"] = {**(main.get("build") or {}), "network": "host"}
    others = [n for n in services if n != "main"]
    for name, svc in services.items():
        svc["network_mode"] = "host"
        # Harbor's keep-alive (`sh -c "sleep infinity"`) ignores SIGTERM, so each trial's stop
        # waited compose's 10 s default, most of a trial; rsr stops its own containers this way.
        # The stop comes after the verdict.
        svc.setdefault("stop_signal", "SIGKILL")
        svc.setdefault("stop_grace_period", "1s")
        svc.pop("networks", None)
        if name == "main" and others:
            # Host networking has no service DNS; rsr resolves service names to loopback the same way.
            svc["extra_hosts"] = [f"{n}:127.0.0.1" for n in others]
    compose_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return copy


def parse_probes(output: str) -> dict[str, dict[str, str]]:
    probes: dict[str, dict[str, str]] = {}
    for m in re.finditer(r"RSR-PROBE-BEGIN (\w+)\n(.*?)RSR-PROBE-END \1", output, re.S):
        fields = {}
        for line in m.group(2).splitlines():
            key, _, value = line.partition("=")
            fields[key] = value.strip()
        probes[m.group(1)] = fields
    return probes


def start_harbor(tasks: list[Path], workdir: Path, agent: str = "oracle") -> subprocess.Popen[str]:
    dataset = workdir / f"harbor-tasks-{agent}"
    dataset.mkdir()
    for t in tasks:
        copy = harbor_copy(t, dataset)
        if agent != "oracle":
            # Harbor's copies share the host network and its two runs overlap: a sidecar's port
            # must differ between them or the second bind fails (exit 98).
            for f in (p for p in copy.rglob("*") if p.is_file()):
                text = f.read_text(errors="surrogateescape")
                if "18081" in text:
                    f.write_text(text.replace("18081", "18082"), errors="surrogateescape")
    return subprocess.Popen([str(harbor_home() / "bin" / "harbor"), "run", "-p", str(dataset), "--agent", agent,
                             "-n", HARBOR_CONCURRENCY, "-o", str(workdir / f"harbor-jobs-{agent}"), "-y", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(workdir),
                                 "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def artifact_files(where: Path | str | None) -> dict[str, str]:
    """Collected file -> sha256 below an artifacts directory (Harbor's manifest aside)."""
    root = Path(where) if where else None  # rsr records "" when it kept nothing
    if root is None or not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def harbor_results(proc: subprocess.Popen[str], workdir: Path, agent: str = "oracle") -> dict[str, dict[str, Any]]:
    output, _ = proc.communicate(timeout=1800)
    assert proc.returncode == 0, output[-5000:]
    out: dict[str, dict[str, Any]] = {}
    for result in (workdir / f"harbor-jobs-{agent}").glob("*/*/result.json"):
        data = json.loads(result.read_text())
        stdout = result.parent / "verifier" / "test-stdout.txt"
        steps = [{"name": st["step_name"], "rewards": (st.get("verifier_result") or {}).get("rewards")}
                 for st in data.get("step_results") or []]
        arts = {st["name"]: artifact_files(result.parent / "steps" / st["name"] / "artifacts") for st in steps}
        out[data["task_name"].split("/")[-1]] = {
            "rewards": (data.get("verifier_result") or {}).get("rewards"),
            "steps": steps,
            "artifacts": arts if steps else artifact_files(result.parent / "artifacts"),
            "probes": parse_probes(stdout.read_text() if stdout.is_file() else ""),
            "exception": (result.parent / "exception.txt").read_text()[-2000:]
            if (result.parent / "exception.txt").is_file() else None,
        }
    return out


def harbor_wall(workdir: Path, agent: str = "oracle") -> float | None:
    """Seconds Harbor's job ran, from its own result.json (it ran beside rsr's eval)."""
    for job in (workdir / f"harbor-jobs-{agent}").glob("*/result.json"):
        data = json.loads(job.read_text())
        if data.get("started_at") and data.get("finished_at"):
            span = datetime.fromisoformat(data["finished_at"]) - datetime.fromisoformat(data["started_at"])
            return span.total_seconds()
    return None


def run_rsr(root: Path, workdir: Path, agent: Any = oracle,
            tasks: list[str] | None = None) -> dict[str, dict[str, Any]]:
    logs = inspect_eval(tasks_task("harbor", root, tasks, None), solver=agent(), model="mockllm/model",
                        display="none", log_dir=str(workdir / f"rsr-logs-{agent.__name__}"), max_sandboxes=4)
    assert logs[0].status == "success", logs[0].error
    out = {}
    for s in logs[0].samples or []:
        score = s.scores["verifier"]
        meta = score.metadata or {}
        steps = [{"name": st["name"], "rewards": st["rewards"]} for st in meta.get("steps") or []]
        if steps:
            arts = {st["name"]: artifact_files((st.get("artifacts") or {}).get("dir")) for st in meta["steps"]}
        else:
            arts = artifact_files((meta.get("artifacts") or {}).get("dir"))
        out[str(s.id)] = {"rewards": dict(meta.get("metrics") or {}), "steps": steps, "artifacts": arts,
                          "probes": parse_probes(score.explanation or ""), "error": meta.get("error")}
    return out


def compare(ours: dict[str, Any], theirs: dict[str, Any], name: str = "") -> list[str]:
    """Field-level differences of one task (known ones excluded)."""
    diffs = []
    # No rewards at all (a trial whose verifier never returned): Harbor None, rsr an empty dict.
    if name in MEAN_OVER_DECLARED_STEPS:
        pass  # see MEAN_OVER_DECLARED_STEPS
    elif (ours["rewards"] or None) != (theirs["rewards"] or None):
        diffs.append(f"rewards: rsr {ours['rewards']} vs Harbor {theirs['rewards']}")
    if ours["steps"] != theirs["steps"]:
        diffs.append(f"steps: rsr {ours['steps']} vs Harbor {theirs['steps']}")
    if ours["artifacts"] != theirs["artifacts"]:
        diffs.append(f"artifacts: rsr {ours['artifacts']} vs Harbor {theirs['artifacts']}")
    if not ours["probes"] and not theirs["probes"]:
        return diffs  # a task without the probe (the core tasks): rewards only
    for phase in ("agent", "verifier"):
        a, b = ours["probes"].get(phase), theirs["probes"].get(phase)
        if a is None or b is None:
            diffs.append(f"{phase} probe missing: rsr {a is not None}, Harbor {b is not None}")
            continue
        for key in sorted(set(a) | set(b)):
            if key in KNOWN_DIFFERENCES or f"{phase}.{key}" in KNOWN_DIFFERENCES or a.get(key) == b.get(key):
                continue
            diffs.append(f"{phase}.{key}: rsr {a.get(key)!r} vs Harbor {b.get(key)!r}")
    return diffs


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = harbor_home()
    assert (home / "bin" / "harbor").is_file()
    work = tmp_path_factory.mktemp("parity")
    root = work / "tasks"
    root.mkdir()
    names = synthetic_tasks(root)
    for name in CORE_TASKS:
        shutil.copytree(REPO / "tasks" / "core" / name, root / name)
        names.append(name)
    unsupported = unsupported_tasks(root)
    stepped = multi_step_tasks(root)
    # Both runners at once: they share nothing but the Docker engine (and its build cache). The
    # null agent runs on the multi-step and artifact tasks only (the rest have a null row elsewhere).
    harbor = start_harbor([root / n for n in [*names, *unsupported, *stepped]], work)
    harbor_nop = start_harbor([root / n for n in stepped], work, agent="nop")
    started = time.monotonic()
    try:
        ours = run_rsr(root, work)
        rsr_wall = time.monotonic() - started
        ours_null = run_rsr(root, work, null, stepped)
        rsr_null_wall = time.monotonic() - started - rsr_wall
    finally:
        theirs = harbor_results(harbor, work)
        theirs_nop = harbor_results(harbor_nop, work, "nop")
    walls = {"rsr oracle": rsr_wall, "rsr null": rsr_null_wall,
             "Harbor oracle": harbor_wall(work), "Harbor nop": harbor_wall(work, "nop"),
             "both": time.monotonic() - started}
    return {"walls": walls, "names": [*names, *stepped], "unsupported": unsupported, "ours": ours, "theirs": theirs,
            "root": root, "stepped": stepped, "ours_null": ours_null, "theirs_nop": theirs_nop}


def test_harbor_and_rsr_oracles_agree_on_every_task(parity: dict[str, Any], capsys: pytest.CaptureFixture) -> None:
    table = []
    failures = []
    for name in parity["names"]:
        ours, theirs = parity["ours"].get(name), parity["theirs"].get(name)
        assert ours is not None and theirs is not None, f"{name}: rsr {ours is not None}, Harbor {theirs is not None}"
        if theirs["exception"] is not None:
            # Every task's failure at once, not the first: the exception's last lines name it.
            last = " | ".join(theirs["exception"].strip().splitlines()[-3:])[-400:]
            table.append(f"{name:<26} Harbor failed: {last}")
            failures.append(f"{name}: Harbor failed: {last}")
            continue
        diffs = compare(ours, theirs, name)
        steps = f" steps rsr={ours['steps']} harbor={theirs['steps']}" if ours["steps"] or theirs["steps"] else ""
        table.append(f"{name:<26} reward rsr={ours['rewards']} harbor={theirs['rewards']}{steps} "
                     f"{'same' if not diffs else '; '.join(diffs)}")
        failures += [f"{name}: {d}" for d in diffs]
    with capsys.disabled():
        print("\n" + "\n".join(table))
        print("wall s (side by side): " + ", ".join(f"{k} {v:.0f}" for k, v in parity["walls"].items() if v))
    assert not failures, "\n".join(failures)


def test_every_core_task_passes_its_oracle_under_harbor_and_rsr(parity: dict[str, Any]) -> None:
    # Equal verdicts could still be equal failures: the oracle must pass each core task under both.
    assert len(CORE_TASKS) >= 40 and set(CORE_TASKS) <= set(parity["names"])
    failing = {name: (parity["ours"][name]["rewards"], (parity["theirs"].get(name) or {}).get("rewards"))
               for name in CORE_TASKS
               if parity["ours"][name]["rewards"].get("reward") != 1
               or ((parity["theirs"].get(name) or {}).get("rewards") or {}).get("reward") != 1}
    assert not failing, f"oracle rewards (rsr, Harbor): {failing}"


def test_harbor_and_rsr_null_agents_agree_on_multi_step_tasks(parity: dict[str, Any],
                                                            capsys: pytest.CaptureFixture) -> None:
    table, failures = [], []
    for name in parity["stepped"]:
        ours, theirs = parity["ours_null"].get(name), parity["theirs_nop"].get(name)
        assert ours is not None and theirs is not None, f"{name}: rsr {ours is not None}, Harbor {theirs is not None}"
        diffs = compare(ours, theirs, name)
        table.append(f"{name:<16} null: rsr={ours['rewards']} steps={ours['steps']} "
                     f"harbor={theirs['rewards']} steps={theirs['steps']} {'same' if not diffs else '; '.join(diffs)}")
        failures += [f"{name}: {d}" for d in diffs]
    with capsys.disabled():
        print("\n" + "\n".join(table))
    assert not failures, "\n".join(failures)


def test_multi_step_rewards_follow_the_tasks_own_rules(parity: dict[str, Any]) -> None:
    # Not only equal to Harbor: what each task was written to exercise.
    gated = parity["ours"]["steps-gated"]
    assert [s["name"] for s in gated["steps"]] == ["a", "b"]  # b's min_reward stopped the trial
    # mean over the 3 declared steps (c never ran: a 0 term), a missing key counting 0
    assert gated["rewards"] == pytest.approx({"reward": 0.5, "exists": 1 / 3})
    assert parity["ours"]["two-steps"]["rewards"] == {"reward": 1.0}  # final
    assert [s["rewards"] for s in parity["ours"]["steps-no-reward"]["steps"]] == [None]
    assert [s["rewards"] for s in parity["ours"]["steps-separate"]["steps"]] == [{"reward": 1.0}, {"reward": 1.0}]
    assert parity["ours"]["steps-setup"]["steps"] == [{"name": "ready", "rewards": {"reward": 1.0}},
                                                      {"name": "broken", "rewards": None}]
    assert parity["ours"]["steps-setup"]["rewards"] == {"reward": 0.5}  # the broken step is a 0 term
    assert sorted(parity["ours"]["artifacts"]["artifacts"]) == [
        "app/report.txt", "logs/artifacts/pub.txt", "out/hook.txt", "out/keep.txt"]


def test_probe_sees_what_the_task_asked_for(parity: dict[str, Any]) -> None:
    # Not only equal to Harbor: equal to the task's own settings.
    agent = parity["ours"]["probe"]["probes"]["agent"]
    verifier = parity["ours"]["probe"]["probes"]["verifier"]
    assert agent["pwd"] == "/app" and agent["user"].startswith("root:")
    assert agent["env.PROBE_TASK"] == "from-task" and agent["env.PROBE_SOLUTION"] == "from-solution"
    assert agent["env.PROBE_DEFAULTED"] == "fallback"
    assert verifier["env.PROBE_VERIFIER"] == "from-verifier" and "env.PROBE_SOLUTION" not in verifier
    assert agent["tests"] == "" and verifier["solution"] in ("", "solve.sh")
    assert agent["mem"] == str(512 * 1024 * 1024) and agent["net"] == "lo"
    assert parity["ours"]["probe-user"]["probes"]["agent"]["user"].startswith("nobody:")
    assert parity["ours"]["sidecar"]["rewards"] == {"reward": 1.0}
    assert parity["ours"]["milestones"]["rewards"] == {"reward": 0.0, "milestone_write": 1.0, "milestone_sort": 0.0}


def test_lint_reports_no_harbor_difference_for_these_tasks(parity: dict[str, Any]) -> None:
    # Every feature these tasks use is supported, so lint must promise parity for each of them.
    from rsr.sandbox.compose import compose_differences
    from rsr.tasks.load import load_task

    for name in parity["names"]:
        task = load_task(parity["root"] / name)
        found = task.harbor_differences() + compose_differences(task)
        assert found == [], (name, found)


def test_lint_predicts_where_rsr_still_differs_from_harbor(parity: dict[str, Any],
                                                           capsys: pytest.CaptureFixture) -> None:
    from rsr.tasks.load import load_task

    for name, feature in parity["unsupported"].items():
        theirs, ours = parity["theirs"][name], parity["ours"][name]
        with capsys.disabled():
            print(f"{name:<18} reward rsr={ours['rewards']} harbor={theirs['rewards']} (not yet supported: {feature})")
        assert theirs["exception"] is None and theirs["rewards"] == {"reward": 1}, (name, theirs)
        assert ours["rewards"].get("reward") != 1.0, f"{name}: rsr now agrees with Harbor; move it to the agreeing set"
        task = load_task(parity["root"] / name)
        assert any(feature in d for d in task.harbor_differences()), name
        assert not [w for w in task.warnings if "unknown key" in w], task.warnings
