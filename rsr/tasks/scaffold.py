"""`rsr tasks new`: a complete task scaffold that passes lint and the quality gate's shape."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from rsr.errors import RsrError
from rsr.tasks.host_fit import DIFFICULTIES

CATEGORIES = (
    "software-engineering", "debugging", "system-administration", "data-processing",
    "scientific-computing", "security", "build-systems", "text-processing", "databases",
    "version-control", "networking", "performance",
)


def _template(name: str) -> str:
    return (resources.files("rsr.tasks") / "scaffold" / name).read_text(encoding="utf-8")


def checker_kit() -> str:
    """rsr_check.py, the checker kit every task's tests/ holds a verbatim copy of."""
    return (resources.files("rsr.tasks") / "kit" / "rsr_check.py").read_text(encoding="utf-8")


def scaffold_task(root: Path, name: str, category: str = "software-engineering",
                  difficulty: str = "medium", milestones: bool = False) -> Path:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise RsrError(f"task name {name!r} must be kebab-case (a-z, 0-9, -)")
    if category not in CATEGORIES:
        raise RsrError(f"unknown category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    if difficulty not in DIFFICULTIES:
        raise RsrError("difficulty must be easy, medium or hard")
    task_dir = root / name
    if task_dir.exists():
        raise RsrError(f"{task_dir} already exists")
    values = {"name": name, "category": category, "difficulty": difficulty,
              "milestones": '\nmilestones = ["counted", "reported"]' if milestones else ""}
    files = {
        "instruction.md": "instruction.md",
        "task.toml": "task.toml",
        "environment/Dockerfile": "Dockerfile",
        "environment/data/words.txt": "words.txt",
        "tests/test.sh": "test_milestones.sh" if milestones else "test.sh",
        "tests/test_outputs.py": "test_outputs.py",
        "solution/solve.sh": "solve.sh",
    }
    for rel, template in files.items():
        path = task_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _template(template)
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        path.write_text(text, encoding="utf-8")
        if path.suffix == ".sh":
            path.chmod(0o755)
    (task_dir / "tests" / "rsr_check.py").write_text(checker_kit(), encoding="utf-8")
    return task_dir
