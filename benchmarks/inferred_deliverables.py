"""What strict mode costs honest tasks whose deliverables are inferred rather than declared.

Copies core tasks with their `[verifier] allow_changes` stripped (so they declare nothing, as a
TB2 task), infers their deliverables from the reference solutions (`rsr tasks infer-deliverables`),
then runs the oracle under `-T integrity=strict` and prints, per task, the declared roots, the
inferred ones, what was pruned, and whether the honest reference still passes.

    python benchmarks/inferred_deliverables.py [--tasks a,b,c]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ("hello-world,kv-server-protocol,git-recover-lost-work,shared-library-install,netcalc-deb-package,"
           "provision-users,incident-backdoor-cleanup,broken-service-recovery")


def main(argv: list[str] | None = None) -> int:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.agent import as_solver

    from rsr.harness.oracle import oracle
    from rsr.suites.infer import infer_deliverables
    from rsr.suites.inspect_tasks import tasks_task
    from rsr.verify import inferred

    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--tasks", default=DEFAULT)
    opts = args.parse_args(argv)
    names = [n for n in opts.tasks.split(",") if n]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "stripped"
        declared = {}
        for name in names:
            shutil.copytree(REPO / "tasks/core" / name, root / name)
            toml = root / name / "task.toml"
            declared[name] = tomllib.loads(toml.read_text())["verifier"].get("allow_changes")
            toml.write_text(re.sub(r"(?m)^allow_changes\s*=.*\n", "", toml.read_text()))
        out = Path(tmp) / "deliverables.json"
        os.environ[inferred.ENV_FILES] = str(out)
        t0 = time.monotonic()
        _, found = infer_deliverables(str(root), out=out, log_dir=str(Path(tmp) / "infer"))
        infer_sec = time.monotonic() - t0
        usable = [f.name for f in found if f.status == "inferred"]
        results = {}
        if usable:
            logs = inspect_eval(tasks_task("harbor", root, ",".join(usable), None, integrity="strict",
                                           solver=as_solver(oracle())),
                                model="mockllm/model", display="none", log_dir=str(Path(tmp) / "strict"))
            for s in logs[0].samples or []:
                sc = s.scores["verifier"]
                results[str(s.id)] = (sc.value["passed"], (sc.metadata or {}).get("error"),
                                      ((sc.metadata or {}).get("integrity") or {}).get("verdict"))
    print("| task | declared allow_changes | inferred trees beside the workdir | inferred exact paths | pruned "
          "| untried | trials | strict oracle |")
    print("|---|---|---|---|---|---|---|---|")
    for f in sorted(found, key=lambda f: f.name):
        passed = results.get(f.name)
        shown = ("PASS" if passed and passed[0] == 1 else f"fail ({passed[1]}, {passed[2]})") if passed else f.status
        print(f"| {f.name} | {len(declared[f.name] or [])} | {', '.join(f.roots) or '-'} | "
              f"{', '.join(f.exact) or '-'} | {len(f.pruned)} | {f.unpruned} | {f.trials} | {shown} |")
    ok = sum(1 for v in results.values() if v[0] == 1)
    print(f"\n{ok}/{len(names)} honest reference solutions pass under strict with inferred deliverables "
          f"(inference {infer_sec:.0f}s for {len(names)} tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
