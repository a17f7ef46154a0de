"""`python -m rsr.rl CONFIG` (for `accelerate launch -m rsr.rl CONFIG`): same as `rsr rl`."""

from __future__ import annotations

import sys

from rsr.errors import RsrError
from rsr.rl.main import main, parser

if __name__ == "__main__":
    args = parser().parse_args()
    try:
        main(**vars(args))
    except RsrError as e:  # the user's to fix: one line, as `rsr rl` prints it
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
