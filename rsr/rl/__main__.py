"""`python -m rsr.rl CONFIG` (for `accelerate launch -m rsr.rl CONFIG`): same as `rsr rl`."""

from __future__ import annotations

import sys

from rsr.errors import RsrError
from rsr.launch import user_error_exit
from rsr.rl.main import main, parser

if __name__ == "__main__":
    args = parser().parse_args()
    try:
        summary = main(**vars(args))
    except RsrError as e:  # the user's to fix: one line, as `rsr rl` prints it (rank 0 only)
        user_error_exit(e)
    if summary is not None:
        print(f"{args.config}: ok {summary}")
    sys.exit(0)
