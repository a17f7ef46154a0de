"""One command, every attack family (the original suite and the issue-22 red team): which defence
must stop it and what this checkout's verifier actually does with it, measured in Docker.

    python tests/integrity/attack_table.py            # both suites (two evals)
    python tests/integrity/attack_table.py --new      # the red team only
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attack_scripts import ATTACKS, ORACLE, Attack, run_attacks  # noqa: E402
from redteam_scripts import REDTEAM, REDTEAM_CONTROLS, RedTeam  # noqa: E402

OLD_DEFENCE = {1: "snapshot isolation (own PID namespace)", 2: "integrity audit", 3: "reward reader / exit status",
               4: "survivor check", 5: "resource limits"}


def defence(attack: Attack) -> str:
    if isinstance(attack, RedTeam):
        return attack.defence + (" (i22-tasks)" if attack.needs_tasks else "")
    return OLD_DEFENCE.get(attack.family, "")


# Resource-abuse families whose work is done: passing is right, the abuse only must stay contained.
WORK_DONE = {"fork-bomb"}


def observed(meta: dict[str, Any]) -> str:
    """How the verifier dealt with a sample, as measured: its error, or where the changes went."""
    integrity = meta.get("integrity") or {}
    if meta.get("error"):
        return str(meta["error"])
    if integrity.get("dropped_count"):
        return f"dropped {integrity['dropped_count']} changes; the tests failed"
    return "the tests failed" + (" (hardened checker)" if integrity.get("hardened") else "")


def rows(samples: dict[str, Any], attacks: list[Attack]) -> list[str]:
    by_name = {a.name: a for a in attacks}
    out = []
    for key, s in sorted(samples.items(), key=lambda kv: (kv[0].split("@")[1] == ORACLE, kv[0])):
        task, name = key.split("@")
        sc = s.scores["verifier"]
        meta = sc.metadata or {}
        attack = by_name.get(name)
        passed = sc.value["passed"] == 1
        if attack is None:
            result, how = ("control passes" if passed else "CONTROL FAILS"), str(meta.get("error") or "")
        elif name in WORK_DONE:
            result, how = ("passes (work done, abuse contained)" if passed else "stopped"), observed(meta)
        else:
            result = "FORGED" if passed else "stopped"
            how = f"clean pass ({(meta.get('integrity') or {}).get('trust')})" if passed else observed(meta)
        out.append(f"| {name} | {task} | {defence(attack) if attack else 'honest control'} | {result} | {how} |")
    return out


def main(argv: list[str]) -> int:
    suites: list[tuple[list[Attack], list[str] | None]] = [(list(REDTEAM), REDTEAM_CONTROLS)]
    if "--new" not in argv:
        suites.insert(0, (list(ATTACKS), None))
    print("| attack | task | defence (what must stop it) | result | observed |")
    print("|---|---|---|---|---|")
    for attacks, controls in suites:
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            samples = run_attacks(Path(tmp), attacks, controls, integrity="strict")
        print("\n".join(rows(samples, attacks)))
        print(f"| ({len(samples)} samples in {time.monotonic() - started:.0f} s) | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
