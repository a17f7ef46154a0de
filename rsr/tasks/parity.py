"""What a task would do differently under rsr than under Harbor 0.26, read from its config alone.

`rsr tasks lint` prints these per task. A supported feature produces no line; when rsr learns a
feature, its entry leaves `UNSUPPORTED` and its lines disappear. The compose-file half of the
comparison lives with the compose adapter (`rsr.sandbox.compose.compose_differences`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from rsr.tasks.models import TaskConfig

UNSUPPORTED: frozenset[str] = frozenset({
    "separate_artifacts", "allowlist", "phase_network", "windows", "tpu",
})
"""Harbor features rsr does not run yet (names used below)."""


def harbor_differences(cfg: TaskConfig, parser_name: str | None = None,
                       unsupported: frozenset[str] = UNSUPPORTED) -> list[str]:
    """The lines for a task's config; `parser_name` is the TB1 parser that scores it, if any
    (`LoadedTask.harbor_differences` passes both)."""
    env = cfg.environment
    out: list[str] = []

    def add(feature: str, line: str) -> None:
        if feature in unsupported:
            out.append(line)

    # MCP servers run as in Harbor (an HTTP one is a compose service of the task or a process in
    # its image, a stdio one a command the agent runs) and the terminal harnesses name them in the
    # first prompt as Harbor's Terminus 2 does; skills_dir's skills are listed there too
    # (rsr.harness.task_extras).
    for m in env.mcp_servers:
        if m.headers:
            out.append(f"environment.mcp_servers '{m.name}' headers: Harbor resolves ${{VAR}} references for "
                       "agents that forward headers; rsr's harnesses forward none")
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
    if parser_name is not None and parser_name != "pytest":
        out.append(f"scored by Terminal-Bench 1's '{parser_name}' parser, as TB1 did; Harbor's TB1 "
                   "migration scores the exit code of run-tests.sh instead")
    return out


def verifier_mode(config: TaskConfig, step: int | None = None) -> str:
    """'shared' or 'separate': a step's own setting wins, else the task's (as in Harbor)."""
    if step is not None:
        own = config.steps[step].verifier
        if own.environment_mode is not None or own.environment is not None:
            return own.mode
    return config.verifier.mode
