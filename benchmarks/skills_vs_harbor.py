"""Side by side: tasks with skills (e.g. SkillsBench's) under Harbor 0.26 and under rsr.

For each task directory given: both runners' oracles (rewards compared) and a scripted
Terminus 2 run through one loopback model server (every request compared, the first one with
its `<available_skills>` block above all). The tasks are run from adapted copies, the same copy
for both runners:

- `FROM` images this engine cannot pull are replaced by a local stand-in (`--stand-in
  ubuntu:24.04`: Debian bookworm with python3, pip and tmux, plus the wheels given with
  `--wheels`, installed offline: e.g. the pytest and pytest-json-ctrf that SkillsBench's tests
  pin, fetched beforehand with `pip download`; no registry is reachable from the engine, see
  docker-here.md);
- `environment.skills_dir` is set where the task's Dockerfile copies its skills
  (`--skills-dir`, default `/root/.claude/skills`), as SkillsBench's Harbor adapter does for
  Terminus 2, when the task does not set one;
- Harbor's copy allows internet and uses the host network (harbor-here.md); rsr's has none.

    python benchmarks/skills_vs_harbor.py tests/harness/tasks/skills-report
    python benchmarks/skills_vs_harbor.py ~/skillsbench/tasks/3d-scan-calc \\
        --stand-in ubuntu:24.04 --wheels ~/wheels
    # ~/wheels: pip download pytest==8.4.1 pytest-json-ctrf==0.3.5 --only-binary=:all: \
    #     --python-version 3.11 --platform any --implementation py -d ~/wheels

Prints per task: the two oracle rewards, whether the first requests are identical, the first
difference of the whole conversation if any, and the scripted run's two rewards. Exits non-zero
when a reward or a request differs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAND_IN_PACKAGES = "python3 python3-pip python3-venv tmux procps ca-certificates"


def stand_in_tag(image: str) -> str:
    return "rsr-standin/" + re.sub(r"[^a-z0-9._-]", "-", image.lower())


def build_stand_in(image: str, wheels: Path | None) -> str:
    """A local image standing in for `image` (which cannot be pulled here)."""
    tag = stand_in_tag(image)
    with tempfile.TemporaryDirectory() as context:
        lines = ["FROM debian:bookworm-slim",
                 "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                 f"--no-install-recommends {STAND_IN_PACKAGES} && rm -rf /var/lib/apt/lists/*"]
        if wheels is not None and any(wheels.glob("*.whl")):
            shutil.copytree(wheels, Path(context) / "wheels")
            lines += ["COPY wheels /tmp/wheels",
                      "RUN pip3 install --break-system-packages --no-index --find-links "
                      "/tmp/wheels /tmp/wheels/*.whl && rm -rf /tmp/wheels"]
        (Path(context) / "Dockerfile").write_text("\n".join(lines) + "\n")
        subprocess.run(["docker", "build", "--network", "host", "-q", "-t", tag, context],
                       check=True, capture_output=True, text=True)
    return tag


def adapt(task: Path, dest: Path, stand_ins: dict[str, str], skills_dir: str) -> Path:
    copy = dest / task.name
    shutil.copytree(task, copy)
    dockerfile = copy / "environment" / "Dockerfile"
    text = dockerfile.read_text()
    for image, tag in stand_ins.items():
        text = re.sub(rf"^FROM\s+{re.escape(image)}\s*$", f"FROM {tag}", text, flags=re.M)
    dockerfile.write_text(text)
    toml = copy / "task.toml"
    config = toml.read_text()
    if "skills_dir" not in config:
        config = config.replace("[environment]", f'[environment]\nskills_dir = "{skills_dir}"', 1)
    config = re.sub(r"^allow_internet\s*=.*$", "", config, flags=re.M)
    config = config.replace("[environment]", "[environment]\nallow_internet = false", 1)
    toml.write_text(config)
    return copy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="+", type=Path, help="task directories")
    parser.add_argument("--stand-in", action="append", default=[], metavar="IMAGE",
                        help="a FROM image to replace by a local stand-in (repeatable)")
    parser.add_argument("--wheels", type=Path, help="wheels installed into the stand-ins")
    parser.add_argument("--skills-dir", default="/root/.claude/skills")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "harness")]
    from harbor_ref import harbor_home, harbor_site_packages
    from loopback_openai import LoopbackOpenAI, Turn
    from parity import (
        Scenario,
        Variant,
        first_difference,
        renamed,
        run_rsr,
        start_harbor,
        start_harbor_oracle,
    )
    from parity_scenarios import DONE, reply

    venv = harbor_home()
    os.environ["TIKTOKEN_CACHE_DIR"] = str(harbor_site_packages() / "litellm" /
                                           "litellm_core_utils" / "tokenizers")
    os.environ["RSR_HARBOR_PYTHON"] = str(venv / "bin" / "python")
    work = Path(tempfile.mkdtemp(prefix="rsr-skills-vs-harbor-"))
    stand_ins = {image: build_stand_in(image, args.wheels) for image in args.stand_in}
    adapted = [adapt(t.expanduser().resolve(), work / "adapted", stand_ins, args.skills_dir)
               for t in args.tasks]
    scenarios = [Scenario(f"sk-{t.name}", [Turn(reply(f"ls {args.skills_dir}\n")), DONE, DONE],
                          task=t.name, root=t.parent) for t in adapted]
    variants = {"rsr": Variant({"prompts": "harbor"})}
    started = time.monotonic()
    with LoopbackOpenAI({s.name: s.turns for s in
                         [*scenarios, *(renamed(s, "rsr") for s in scenarios)]}) as server:
        jobs = start_harbor(venv, scenarios, server, work)
        oracle_jobs = start_harbor_oracle(venv, adapted, work)
        samples = run_rsr(scenarios, server, work, variants, oracle_tasks=adapted)
        harbor = jobs.wait(timeout=3600)
        harbor_oracle = oracle_jobs.wait(timeout=3600)
        requests = {name: rec.requests for name, rec in server.recordings.items()}
    print(f"{len(adapted)} task(s), both runners, {time.monotonic() - started:.0f} s; "
          f"work dir {work}")

    def reward_of(trial: dict | None) -> object:
        result = (trial or {}).get("result") or {}
        return ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")

    def sample_reward(key: str) -> object:
        sample = samples.get(key)
        if sample is None or not sample.scores:
            return f"error: {sample.error.message if sample and sample.error else 'missing'}"
        return next(iter(sample.scores.values())).value.get("reward")

    failed = False
    for task, scenario in zip(adapted, scenarios, strict=True):
        oracle = (reward_of(harbor_oracle.get(task.name)), sample_reward(f"{task.name}.oracle"))
        ours, theirs = requests[f"{scenario.name}.rsr"], requests[scenario.name]
        first_same = bool(ours and theirs) and first_difference(theirs[:1], ours[:1]) is None
        difference = first_difference(theirs, ours)
        scripted = (reward_of(harbor.get(scenario.name)), sample_reward(f"{scenario.name}.rsr"))
        skills = str(theirs[0]["messages"][0]["content"]).count("<skill>") if theirs else 0
        print(f"{task.name}: oracle Harbor {oracle[0]} rsr {oracle[1]}; first request "
              f"{'identical' if first_same else 'DIFFERENT'} ({skills} skills listed); "
              f"conversation {'identical' if difference is None else 'DIFFERENT'}; scripted "
              f"rewards Harbor {scripted[0]} rsr {scripted[1]}")
        if difference is not None:
            print(f"  {difference}")
        failed |= oracle[0] != oracle[1] or scripted[0] != scripted[1] or difference is not None
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
