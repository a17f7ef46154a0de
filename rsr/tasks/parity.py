"""What a task would do differently under rsr than under Harbor 0.26, read from its config alone.

`rsr tasks lint` prints these per task. A supported feature produces no line; when rsr learns a
feature, its entry leaves `UNSUPPORTED` and its lines disappear. The compose-file half of the
comparison lives with the compose adapter (`rsr.sandbox.compose.compose_differences`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from rsr.tasks.load import LoadedTask

UNSUPPORTED: frozenset[str] = frozenset({
    "steps", "mcp_servers", "artifacts",
    "collect", "allowlist", "phase_network", "windows", "tpu",
})
"""Harbor features rsr does not run yet (names used below)."""


def harbor_differences(task: LoadedTask, unsupported: frozenset[str] = UNSUPPORTED) -> list[str]:
    cfg = task.config
    env = cfg.environment
    out: list[str] = []

    def add(feature: str, line: str) -> None:
        if feature in unsupported:
            out.append(line)

    if cfg.steps:
        add("steps", f"[[steps]] ({len(cfg.steps)} steps): Harbor runs each step's agent and verifier in turn; "
                     "rsr runs only the first step's instruction")
    # A task-level separate verifier runs as Harbor runs it (rsr.verify.separate); per-step ones
    # come with [[steps]], which rsr does not run yet.
    if any(s.verifier.mode == "separate" for s in cfg.steps
           if s.verifier.environment_mode is not None or s.verifier.environment is not None):
        add("steps", "[[steps]] verifier environment_mode = 'separate': Harbor runs each step's tests in their "
                     "own container; rsr runs no steps yet")
    if env.mcp_servers:
        add("mcp_servers", f"environment.mcp_servers ({', '.join(m.name for m in env.mcp_servers)}): "
                           "Harbor offers them to the agent; rsr does not")
    # environment.skills_dir runs as in Harbor: the terminal harnesses list the skills they find
    # there in the first prompt (rsr.harness.task_extras).
    if cfg.artifacts or any(s.artifacts for s in cfg.steps):
        add("artifacts", "artifacts: Harbor collects them after the agent; rsr does not")
    if cfg.verifier.collect:
        add("collect", "[[verifier.collect]]: Harbor runs these hooks after the agent; rsr does not")
    if env.network_mode == "allowlist":
        add("allowlist", "environment.network_mode = 'allowlist': Harbor allows the listed hosts; "
                         "rsr gives the sandbox no network")
    if cfg.agent.network_mode is not None or cfg.verifier.network_mode is not None:
        add("phase_network", "[agent]/[verifier] network_mode: Harbor switches the network per phase; "
                             "rsr applies the environment's policy throughout")
    if env.os == "windows":
        add("windows", "environment.os = 'windows': rsr runs Linux containers only")
    if env.tpu is not None:
        add("tpu", "environment.tpu: rsr cannot attach TPUs")
    if not env.explicitly_set("cpus"):
        out.append(f"environment.cpus not set: Harbor leaves CPU unlimited, rsr caps it at {env.cpus:g}")
    if not env.explicitly_set("memory_mb") and "memory" not in (env.model_extra or {}):
        out.append(f"environment.memory_mb not set: Harbor leaves memory unlimited, rsr caps it at {env.memory_mb} MB")
    if task.tb1 is not None and task.tb1.parser_name != "pytest":
        out.append(f"scored by Terminal-Bench 1's '{task.tb1.parser_name}' parser, as TB1 did; Harbor's TB1 "
                   "migration scores the exit code of run-tests.sh instead")
    return out
