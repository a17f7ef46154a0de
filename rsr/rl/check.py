"""`rsr rl --check CONFIG`: everything a GRPO run needs, checked at once, nothing heavy loaded.

Also the first thing every `rsr rl` run does, so a missing cold-start checkpoint is one line
naming it and the command that makes it (the config's `model_from`), not a Hugging Face
repo-id error after the start-up.
"""

from __future__ import annotations

from pathlib import Path

from rsr.errors import RsrError
from rsr.rl.config import RLConfig
from rsr.training.check import Problems, check_accelerate_config, check_model, check_writable, missing_extra

COLD_START = "an SFT run's final/ directory (`rsr train RECIPE` writes OUTPUT_DIR/final)"


def check_suite(problems: Problems, cfg: RLConfig) -> int:
    """The training tasks load (task.toml read, nothing built); returns how many there are."""
    from rsr.suites.registry import resolve_suite_path
    from rsr.tasks.load import load_dataset

    if cfg.suite.path is not None and not Path(cfg.suite.path).is_dir():
        problems.add("suite.path", f"{cfg.suite.path} does not exist ({problems.folder})")
        return 0
    try:
        root = cfg.suite.path or resolve_suite_path(cfg.suite.name, None)
        loaded = load_dataset(Path(root), cfg.suite.tasks, cfg.suite.exclude)
    except RsrError as e:
        problems.add("suite", str(e))
        return 0
    if not loaded.tasks:
        problems.add("suite", f"no tasks under {root}")
    return len(loaded.tasks)


def check_rl_config(cfg: RLConfig, source: Path | None,
                    accelerate_config: Path | None = None) -> dict[str, object]:
    """Every problem of a loaded RL config, raised together (`CheckError`); else a summary."""
    problems = Problems(source)
    if missing := missing_extra():
        problems.add(None, f"the [train] extra is not installed (no {', '.join(missing)}):"
                           " pip install -e '.[train]'")
    check_model(problems, "model", cfg.model, cfg.model_from, what=COLD_START)
    tasks = check_suite(problems, cfg)
    check_writable(problems, "output_dir", Path(cfg.output_dir))
    if cfg.engine.kind == "vllm" and cfg.engine.base_url is None:
        from rsr.engine.env import find_engine, missing_message

        if find_engine() is None:
            problems.add("engine", missing_message() + " (or engine.kind: cpu, rsr's policy server)")
    if accelerate_config is not None:
        check_accelerate_config(problems, accelerate_config)
    problems.raise_any()
    return {"model": cfg.model, "tasks": tasks, "output_dir": str(cfg.output_dir)}
