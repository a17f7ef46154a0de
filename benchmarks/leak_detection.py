"""Benchmark: precision and recall of the critic's deterministic leak checks.

Runs `rsr.factory.critique.deterministic_checks` over a labelled set of runbooks for core
tasks (tests/factory/fixtures/leaks/*.yaml): `clean` runbooks that a good planner writes, and
`leaking` ones that hand over hidden tests, the reference solution or the source run's
outputs, most of them reworded (flag order, quoting, shortened or upper-case hashes, values
computed by the source run). A rejected leaking runbook is a true positive; a rejected clean
runbook is a false reject. No model is called: this measures only the deterministic stage
(the model critic comes after it).

    python benchmarks/leak_detection.py
    python benchmarks/leak_detection.py --verbose --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "factory" / "fixtures" / "leaks"
CORE = ROOT / "tasks" / "core"


def _source(task: Any, produced: dict[str, str]) -> Any:
    from rsr.factory.records import Source

    return Source(id="labelled", task=task.name, task_dir=str(task.paths.task_dir), suite="core",
                  harness="terminus2", epoch=1, reward=1, turns=1, tokens=0, log="",
                  instruction=task.instruction, messages=[], commands=[],
                  produced_files=produced)


def evaluate(fixtures: Path = FIXTURES) -> dict[str, Any]:
    from rsr.factory.critique import deterministic_checks
    from rsr.tasks.load import load_task

    cases: list[dict[str, Any]] = []
    for path in sorted(fixtures.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        task = load_task(CORE / data["task"])
        source = _source(task, data.get("produced") or {})
        labelled = [(False, None, rb) for rb in data["clean"]]
        labelled += [(True, item["leak"], item["runbook"]) for item in data["leaking"]]
        for n, (leaks, kind, runbook) in enumerate(labelled):
            body, reasons = deterministic_checks(task, json.dumps(runbook), source)
            if body is None:
                raise SystemExit(f"{path}: runbook {n} is not a valid runbook: {reasons}")
            cases.append({"task": data["task"], "leaks": leaks, "kind": kind,
                          "rejected": bool(reasons), "reasons": [str(r) for r in reasons],
                          "end_state": runbook["end_state"]})
    tp = sum(c["leaks"] and c["rejected"] for c in cases)
    fp = sum(not c["leaks"] and c["rejected"] for c in cases)
    fn = sum(c["leaks"] and not c["rejected"] for c in cases)
    clean = sum(not c["leaks"] for c in cases)
    per_task: dict[str, dict[str, int]] = {}
    for c in cases:
        t = per_task.setdefault(c["task"], {"clean": 0, "leaking": 0, "caught": 0,
                                            "false_rejects": 0})
        t["leaking" if c["leaks"] else "clean"] += 1
        t["caught"] += c["leaks"] and c["rejected"]
        t["false_rejects"] += (not c["leaks"]) and c["rejected"]
    return {"clean": clean, "leaking": len(cases) - clean, "true_positives": tp,
            "false_positives": fp, "false_negatives": fn,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0,
            "false_reject_rate": fp / clean if clean else 0.0,
            "per_task": per_task, "cases": cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--verbose", action="store_true", help="list misses and false rejects")
    parser.add_argument("--json", type=Path, help="write the full result here")
    args = parser.parse_args(argv)
    result = evaluate(args.fixtures)
    print(f"labelled runbooks: {result['clean']} clean, {result['leaking']} leaking "
          f"({len(result['per_task'])} core tasks)")
    for task, t in result["per_task"].items():
        print(f"  {task}: caught {t['caught']}/{t['leaking']} leaking, "
              f"false rejects {t['false_rejects']}/{t['clean']} clean")
    print(f"precision: {result['precision']:.3f}")
    print(f"recall: {result['recall']:.3f}")
    print(f"false reject rate: {result['false_reject_rate']:.3f}")
    if args.verbose:
        for c in result["cases"]:
            if c["leaks"] != c["rejected"]:
                what = "missed" if c["leaks"] else "false reject"
                print(f"- {what} [{c['task']}] {c['kind'] or ''}: {c['end_state'][:90]}")
                for r in c["reasons"]:
                    print(f"    {r}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
