"""matplotlib for reports: headless (Agg) and a clear error when the extra is missing."""

from __future__ import annotations

from typing import Any

from rsr.errors import RsrError

__all__ = ["pyplot"]


def pyplot() -> Any:
    """`matplotlib.pyplot` on the Agg backend (no display needed on servers and in CI)."""
    try:
        import matplotlib
    except ImportError as e:
        raise RsrError("charts need matplotlib: pip install 'rsr[report]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
