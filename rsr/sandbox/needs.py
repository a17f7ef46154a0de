"""What a task asks of the host that this run cannot give it: a network, memory, disk.

Decided before any sample starts, from the task's own files and the run's policy (the
network policy, whether the engine has a bridge network, the host's memory and Docker's free
disk), never from anything an agent writes. The run says so once, in one line per need; a
sample of such a task that then fails is counted as an infrastructure failure of that kind
(`network`, `memory`, `disk`), since the run could not give it what it declared it needs. The
network counts as needed when the task allows the internet and its own test scripts fetch from
it (a solution that fetches cannot be told apart from an agent's failure without reading what
the agent did, so those failures stay the agent's; the line says so all the same). (A
GPU the host lacks is decided earlier: those tasks are not run at all, rsr.suites.inspect_tasks.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

UNMET_KEY = "unmet_needs"
"""Sample metadata: `[{"kind", "message"}]`, what the task needs and this run cannot give."""


def host_memory_mb() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        return None


FETCH = re.compile(r"\b(curl|wget|pip3? install|uv (?:pip|run|sync|add|tool)|uvx|apt-get|apt install|"
                   r"npm (?:i|install|ci)|git clone|go (?:get|install)|cargo install)\b")
"""Commands in a task's test scripts that fetch from the network (Harbor's tasks allow the
internet by default; TB2's test.sh installs its test tools this way)."""


def tests_fetch(tests_dir: Path) -> bool:
    """Whether the task's own test scripts (the hidden tests, which no agent can write) fetch."""
    if not tests_dir.is_dir():
        return False
    for path in sorted(tests_dir.rglob("*.sh"))[:50]:
        try:
            if FETCH.search(path.read_text(errors="replace")[:200_000]):
                return True
        except OSError:
            continue
    return False


def unmet_needs(metadata: dict[str, Any], environment: Any, memory_mb: int | None,
                docker_free_mb: int | None, fetches: bool = False) -> list[dict[str, str]]:
    """The needs of one sample's task this run cannot meet (its metadata as rsr built it;
    `fetches`: its tests fetch from the network, `tests_fetch`)."""
    found: list[dict[str, str]] = []
    if fetches and metadata.get("task_allow_internet") and metadata.get("sandbox_network") == "none":
        why = ("the run's -T network=none" if metadata.get("network_policy") == "none"
               else "this engine has no bridge network")
        found.append({"kind": "network", "message": f"the task's tests fetch from the internet, but its "
                                                    f"sandbox has no network ({why})"})
    wanted = int(getattr(environment, "memory_mb", 0) or 0)
    if memory_mb is not None and wanted > memory_mb:
        found.append({"kind": "memory", "message": f"the task asks for {wanted} MB of memory; this host has "
                                                   f"{memory_mb} MB"})
    declared = "storage_mb" in getattr(environment, "model_fields_set", set())
    storage = int(getattr(environment, "storage_mb", 0) or 0)
    if declared and docker_free_mb is not None and storage > docker_free_mb:
        found.append({"kind": "disk", "message": f"the task asks for {storage} MB of disk; Docker's data has "
                                                 f"{docker_free_mb} MB free"})
    return found


def summary(by_task: dict[str, list[dict[str, str]]]) -> list[str]:
    """One line per kind of unmet need, naming the tasks (what the run prints before it starts)."""
    kinds: dict[str, list[str]] = {}
    example: dict[str, str] = {}
    for task, needs in by_task.items():
        for need in needs:
            kinds.setdefault(need["kind"], []).append(task)
            example.setdefault(need["kind"], need["message"])
    return [f"{len(tasks)} task(s) need what this run lacks ({kind}: {example[kind]}): "
            f"{', '.join(sorted(tasks)[:8])}{' ...' if len(tasks) > 8 else ''}; a failure of theirs is "
            f"counted as an infra error ({kind})" for kind, tasks in kinds.items()]
