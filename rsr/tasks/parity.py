"""What a task would do differently under rsr than under Harbor 0.26, read from its config alone.

`rsr tasks lint` prints these per task. A supported feature produces no line; when rsr learns a
feature, its entry leaves `UNSUPPORTED` and its lines disappear. The compose-file half of the
comparison lives with the compose adapter (`rsr.sandbox.compose.compose_differences`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from rsr.tasks.load import LoadedTask
    from rsr.tasks.models import TaskConfig

UNSUPPORTED: frozenset[str] = frozenset({
    "separate_artifacts", "mcp_servers", "skills_dir", "allowlist", "phase_network", "windows", "tpu",
})
"""Harbor features rsr does not run yet (names used below)."""


def harbor_differences(task: LoadedTask, unsupported: frozenset[str] = UNSUPPORTED) -> list[str]:
    cfg = task.config
    env = cfg.environment
    out: list[str] = []

    def add(feature: str, line: str) -> None:
        if feature in unsupported:
            out.append(line)

    if env.mcp_servers:
        # The servers themselves run as in Harbor (an HTTP one is a compose service of the task or
        # a process in its image, a stdio one a command the agent runs in the sandbox); what
        # differs is only whether the harness names them to the model.
        add("mcp_servers", f"environment.mcp_servers ({', '.join(m.name for m in env.mcp_servers)}): "
                           "Harbor's Terminus 2 names them in the instruction; rsr's harnesses do not yet")
    for m in env.mcp_servers:
        if m.headers:
            out.append(f"environment.mcp_servers '{m.name}' headers: Harbor resolves ${{VAR}} references for "
                       "agents that forward headers; rsr's harnesses forward none")
    if env.skills_dir:
        add("skills_dir", "environment.skills_dir: Harbor copies skills to the agent; rsr does not")
    separate = cfg.verifier.mode == "separate" or any(verifier_mode(cfg, i) == "separate"
                                                      for i in range(len(cfg.steps)))
    declared = [*cfg.artifacts, *(a for s in cfg.steps for a in s.artifacts)]
    if separate and any((a.service or "main") != "main" for a in declared):
        add("separate_artifacts", "sidecar artifacts with a separate verifier: Harbor carries them into the "
                                  "verifier's container; rsr collects them but carries only the main service's")
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


def verifier_mode(config: TaskConfig, step: int | None = None) -> str:
    """'shared' or 'separate': a step's own setting wins, else the task's (as in Harbor)."""
    if step is not None:
        own = config.steps[step].verifier
        if own.environment_mode is not None or own.environment is not None:
            return own.mode
    return config.verifier.mode
