"""Skips that CI must not take: what a Docker machine's set-up provides is required there.

`unless(ok, what)` skips a test on a developer machine that lacks `what`, and fails it when
RSR_REQUIRE_DOCKER=1 (CI, `scripts/test.sh`), where `scripts/setup.sh` installs everything.
"""

from __future__ import annotations

import os

import pytest


def unless(ok: bool, what: str) -> None:
    if ok:
        return
    if os.environ.get("RSR_REQUIRE_DOCKER") == "1":
        pytest.fail(f"RSR_REQUIRE_DOCKER=1 but {what} (scripts/setup.sh installs it)")
    pytest.skip(f"no {what}")
