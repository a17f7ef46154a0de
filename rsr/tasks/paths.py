"""On-disk layout of one task directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TaskPaths:
    """The files of a Harbor-format task.

    ```
    <task_dir>/
      instruction.md          what the agent is told
      task.toml               configuration (schema 1.0-1.2 or legacy `version`)
      environment/            Dockerfile and/or docker-compose.yaml (build context)
      tests/test.sh           hidden tests; write /logs/verifier/reward.{txt,json}
      solution/solve.sh       reference solution, only for the oracle
      steps/<name>/           multi-step tasks: per-step instruction.md, tests/, solution/, workdir/
    ```
    A Terminal-Bench 1 task has `task.yaml`, `run-tests.sh`, `solution.sh|solution.yaml`
    and a Dockerfile at its root instead; `load_task` migrates it.
    """

    task_dir: Path

    @property
    def instruction_path(self) -> Path:
        return self.task_dir / "instruction.md"

    @property
    def config_path(self) -> Path:
        return self.task_dir / "task.toml"

    @property
    def environment_dir(self) -> Path:
        return self.task_dir / "environment"

    @property
    def dockerfile_path(self) -> Path:
        return self.environment_dir / "Dockerfile"

    @property
    def compose_path(self) -> Path | None:
        # Harbor reads exactly this name; a `compose.yaml` or `docker-compose.yml` beside it is
        # task data (sometimes the very file the agent must fix), never the sandbox definition.
        path = self.environment_dir / "docker-compose.yaml"
        return path if path.is_file() else None

    @property
    def tests_dir(self) -> Path:
        return self.task_dir / "tests"

    @property
    def test_script(self) -> Path:
        return self.tests_dir / "test.sh"

    @property
    def solution_dir(self) -> Path:
        return self.task_dir / "solution"

    @property
    def solve_script(self) -> Path:
        return self.solution_dir / "solve.sh"

    # Terminal-Bench 1 layout
    @property
    def tb1_config_path(self) -> Path:
        return self.task_dir / "task.yaml"

    @property
    def tb1_run_tests(self) -> Path:
        return self.task_dir / "run-tests.sh"

    @property
    def tb1_dockerfile(self) -> Path:
        return self.task_dir / "Dockerfile"

    @property
    def tb1_compose(self) -> Path | None:
        path = self.task_dir / "docker-compose.yaml"
        return path if path.is_file() else None

    # Multi-step tasks (`[[steps]]`): steps/<name>/{instruction.md, tests/, solution/, workdir/}
    def step_dir(self, name: str) -> Path:
        return self.task_dir / "steps" / name

    def step_instruction_path(self, name: str) -> Path:
        return self.step_dir(name) / "instruction.md"

    def step_tests_dir(self, name: str) -> Path:
        return self.step_dir(name) / "tests"

    def step_solution_dir(self, name: str) -> Path:
        return self.step_dir(name) / "solution"

    def step_workdir_dir(self, name: str) -> Path:
        """Files copied into the agent's working directory before the step (with an optional
        setup.sh that is run there)."""
        return self.step_dir(name) / "workdir"

    def is_harbor(self) -> bool:
        return self.config_path.is_file()

    def is_tb1(self) -> bool:
        return self.tb1_config_path.is_file() and not self.config_path.is_file()
