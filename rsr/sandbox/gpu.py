"""Whether this machine's sandboxes can have a GPU (`[environment] gpus > 0` tasks need one).

A task that asks for a GPU on an engine without one cannot show anything about an agent: rsr
reports it as not run (needs a GPU), neither scores it 0 nor drops it silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from rsr.errors import RsrError

if TYPE_CHECKING:
    from rsr.tasks.load import LoadedTask

GPU_ENV = "RSR_HAS_GPU"
"""`1`/`0` overrides the detection (a machine whose GPUs rsr cannot see, or a test)."""

NEEDS_GPU = "needs a GPU"


def needs_gpu(task: LoadedTask) -> bool:
    return (task.config.environment.gpus or 0) > 0


class GpuCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    available: bool
    how: str
    """What decided it, for the log and the report."""


def _nvidia_smi() -> int:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU ")) if out.returncode == 0 else 0


def gpu_check() -> GpuCheck:
    """$RSR_HAS_GPU if set; else whether `nvidia-smi -L` lists a GPU on this host (Docker hands
    it to a container through the NVIDIA container toolkit; an engine on another host needs the
    override)."""
    forced = os.environ.get(GPU_ENV)
    if forced is not None and forced.strip():
        value = forced.strip().lower()
        if value not in ("0", "1", "true", "false", "yes", "no"):
            raise RsrError(f"{GPU_ENV}={forced!r}: expected 1 or 0")
        return GpuCheck(available=value in ("1", "true", "yes"), how=f"{GPU_ENV}={forced.strip()}")
    devices = _nvidia_smi()
    if devices == 0:
        return GpuCheck(available=False, how="no GPU listed by nvidia-smi on this host")
    return GpuCheck(available=True, how=f"nvidia-smi lists {devices} GPU(s)")
