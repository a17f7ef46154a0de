"""`python -m rsr.training RECIPE` — the entry point for `accelerate launch ... -m rsr.training`."""

from __future__ import annotations

import sys

from rsr.errors import RsrError
from rsr.launch import user_error_exit
from rsr.training.main import main, parser

if __name__ == "__main__":
    args = parser().parse_args()
    try:
        summary = main(**vars(args))
    except RsrError as e:  # the user's to fix: one line, as `rsr train` prints it (rank 0 only)
        user_error_exit(e)
    if summary is not None:
        print(f"{args.recipe}: ok {summary}")
    sys.exit(0)
