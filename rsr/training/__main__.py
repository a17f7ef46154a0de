"""`python -m rsr.training RECIPE` — the entry point for `accelerate launch ... -m rsr.training`."""

from __future__ import annotations

import sys

from rsr.errors import RsrError
from rsr.training.main import main, parser

if __name__ == "__main__":
    args = parser().parse_args()
    try:
        main(**vars(args))
    except RsrError as e:  # the user's to fix: one line, as `rsr train` prints it
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
