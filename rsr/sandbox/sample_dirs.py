"""Per-sample host directories for the logs a sandbox writes (`/logs/agent`, `/logs/verifier`,
`/logs/artifacts`).

The only host paths rsr lets into a sandbox are directories made here: fresh for every sample run
(never shared by two samples, so concurrent verifiers cannot delete each other's rewards), below
a root the caller owns, and removed when the run is done. A provider that bind-mounts them uses
`binds()`; the compose path gets the same isolation from compose project volumes instead
(`rsr.sandbox.compose.LOG_VOLUMES`), because Inspect's compose provider shares one compose file
between the epochs of a sample and refuses writable host binds.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rsr.tasks.load import AGENT_LOG_DIR, VERIFIER_LOG_DIR

ARTIFACTS_LOG_DIR = "/logs/artifacts"


@dataclass(frozen=True)
class SampleDirs:
    """One sample run's host log directories."""

    root: Path
    agent: Path
    verifier: Path
    artifacts: Path

    def binds(self) -> dict[str, str]:
        """Host directory -> container path, ready for a bind mount."""
        return {str(self.agent): AGENT_LOG_DIR, str(self.verifier): VERIFIER_LOG_DIR,
                str(self.artifacts): ARTIFACTS_LOG_DIR}

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def create_sample_dirs(base: str | Path, task_name: str, sample_key: str) -> SampleDirs:
    """Make a fresh, unique directory tree for one sample run below `base`.

    `sample_key` (e.g. "<sample id>-e<epoch>") only makes the name readable; uniqueness comes from
    the random suffix, so two runs of the same sample never share a directory.
    """
    base = Path(base)
    base.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{task_name}-{sample_key}").strip("-.")[:80] or "sample"
    root = Path(tempfile.mkdtemp(prefix=f"{slug}-", dir=base))
    dirs = SampleDirs(root, root / "agent", root / "verifier", root / "artifacts")
    for d in (dirs.agent, dirs.verifier, dirs.artifacts):
        d.mkdir()
        # The task's agent or verifier user may not be root inside the container.
        d.chmod(0o777)
    root.chmod(0o755)
    return dirs
