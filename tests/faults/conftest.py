"""The fault suite: each fault injected as a user meets it, checked in the headline, the log
and the resume. Task directories come from the spine tests' factory."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spine"))
