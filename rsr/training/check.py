"""`rsr train --check RECIPE`: everything a run needs, checked at once, nothing heavy loaded.

Every training run starts with the same checks, before torch, the model or the distributed
start-up of `accelerate launch`: a 27B recipe on a machine without its data reports every
missing file in one go, in seconds, instead of the first one after minutes of start-up (and
once per rank). `rsr rl --check` (rsr/rl/check.py) builds on the same pieces.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

from rsr.bundled import inside_package
from rsr.config_paths import is_hub_id
from rsr.errors import RsrError
from rsr.training.config import TrainRecipe

TRAIN_EXTRA = ("torch", "transformers", "trl", "peft", "accelerate", "datasets")
"""What `pip install -e '.[train]'` brings; found with find_spec, never imported here."""


@dataclass
class Problems:
    """The problems of one config file: `field: message` each, reported together."""

    source: Path | None
    found: list[str] = field(default_factory=list)

    def add(self, where: str | None, message: str) -> None:
        self.found.append(f"{where}: {message}" if where else message)

    @property
    def folder(self) -> str:
        """What a relative path in the file was resolved against (said with a missing path)."""
        if self.source is None:
            return f"resolved against the working directory {Path.cwd()}"
        return f"resolved against {self.source.resolve().parent}, the config's folder"

    def raise_any(self) -> None:
        if not self.found:
            return
        where = str(self.source) if self.source else "config"
        if len(self.found) == 1:
            raise CheckError(f"{where}: {self.found[0]}", self.found)
        lines = "\n".join(f"  - {p}" for p in self.found)
        raise CheckError(f"{where}: {len(self.found)} problems:\n{lines}", self.found)


class CheckError(RsrError):
    """A config that cannot run; carries every problem found, not just the first."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


def missing_extra(modules: tuple[str, ...] = TRAIN_EXTRA) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def check_writable(problems: Problems, where: str, path: Path) -> None:
    """`path` can be created (or written) by this user, and is not inside the installed rsr."""
    path = Path(path).absolute()
    if inside_package(path):
        problems.add(where, f"{path} is inside the installed rsr package (a shipped config's"
                            " relative output); pass --output-dir DIR, or copy the config")
        return
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        problems.add(where, f"{path} cannot be created: {probe} is a file")
    elif not os.access(probe, os.W_OK | os.X_OK):
        problems.add(where, f"{path} cannot be written: {probe} is not writable by this user")


def check_model(problems: Problems, where: str, value: str, made_by: str | None = None,
                what: str = "a checkpoint directory, or a hub id such as Qwen/Qwen3.5-27B") -> None:
    """A local checkpoint exists and is one; a hub id has a hub id's shape (not fetched here).
    `made_by` is the command that makes the checkpoint, said when it is missing."""
    path = Path(value)
    if is_hub_id(value) and not path.exists():
        # A hub id: from_pretrained downloads it, or finds it in the cache (all it may do offline).
        if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
            from huggingface_hub import try_to_load_from_cache

            if not isinstance(try_to_load_from_cache(value, "config.json"), str):
                problems.add(where, f"hub id {value} is not in the Hugging Face cache and"
                                    " HF_HUB_OFFLINE is set; download it first or give a local checkpoint")
        return
    if not path.exists():
        how = f"; make it with: {made_by}" if made_by else f"; give {what}"
        problems.add(where, f"checkpoint {path} does not exist ({problems.folder}){how}")
    elif not path.is_dir() or not any((path / f).is_file() for f in ("config.json", "adapter_config.json")):
        problems.add(where, f"{path} is not a checkpoint directory (no config.json)")


def check_dataset(problems: Problems, where: str, path: Path) -> int:
    """The dataset exists and every row is a trajectory; returns its row count."""
    from rsr.training.data import _iter_raw, validate_row

    if not path.exists():
        problems.add(where, f"{path} does not exist ({problems.folder})")
        return 0
    if path.is_dir():
        # A `save_to_disk` folder; reading it needs `datasets` (and pyarrow): only its marker files.
        if not any((path / f).is_file() for f in ("dataset_dict.json", "state.json")):
            problems.add(where, f"{path} is a folder but not a `datasets` save_to_disk folder")
        return 0
    rows, before = 0, len(problems.found)
    try:
        for index, raw in _iter_raw(path):
            validate_row(raw, path, index)
            rows += 1
    except RsrError as e:
        problems.add(where, str(e))
    except OSError as e:
        problems.add(where, f"{path} cannot be read: {e}")
    if rows == 0 and len(problems.found) == before:
        problems.add(where, f"{path} has no rows")
    return rows


def check_accelerate_config(problems: Problems, path: Path) -> None:
    """An accelerate config file (`accelerate launch --config_file FILE`) exists and reads."""
    import yaml

    if not path.is_file():
        problems.add("--accelerate-config", f"{path} does not exist")
        return
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        problems.add("--accelerate-config", f"{path} is not valid YAML: {e}")
        return
    if not isinstance(data, dict) or "distributed_type" not in data:
        problems.add("--accelerate-config", f"{path} is not an accelerate config (no distributed_type)")


def check_recipe(recipe: TrainRecipe, source: Path | None,
                 accelerate_config: Path | None = None) -> dict[str, object]:
    """Every problem of a loaded recipe, raised together (`CheckError`); else a summary."""
    from rsr.training.render import load_chat_template, packaged_templates

    problems = Problems(source)
    if missing := missing_extra():
        problems.add(None, f"the [train] extra is not installed (no {', '.join(missing)}):"
                           " pip install -e '.[train]'")
    if recipe.model.path is not None:
        check_model(problems, "model.path", recipe.model.path)
    if recipe.chat_template != "model" and recipe.chat_template not in packaged_templates():
        try:
            load_chat_template(recipe.chat_template)
        except RsrError as e:
            problems.add("chat_template", str(e))
    rows = sum(check_dataset(problems, f"data.datasets[{i}].path", Path(d.path))
               for i, d in enumerate(recipe.data.datasets))
    check_writable(problems, "output_dir", Path(recipe.output_dir))
    if accelerate_config is not None:
        check_accelerate_config(problems, accelerate_config)
    problems.raise_any()
    return {"datasets": len(recipe.data.datasets), "rows": rows,
            "model": recipe.model.path or "tiny (built here)", "output_dir": str(recipe.output_dir)}
