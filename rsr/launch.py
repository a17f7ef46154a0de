"""How `python -m rsr.training` / `python -m rsr.rl` end on a user error, alone or as one of the
processes of `accelerate launch` (torchrun).

Every rank reads the same config and finds the same problem before the distributed start-up,
so only rank 0 prints it (one line, not one per GPU) and every rank exits 2. Under torchrun,
rank 0 also writes the message into torch elastic's error file (`TORCHELASTIC_ERROR_FILE`), so
the launcher's failure summary names it instead of "To enable traceback see ...". The
launcher's own `ChildFailedError` traceback is accelerate's and stays.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import NoReturn

from rsr.errors import RsrError

USER_ERROR_EXIT = 2
RANK_ZERO_GRACE_SECONDS = 3.0


def is_rank_zero() -> bool:
    return os.environ.get("RANK", "0") == "0"


def user_error_exit(error: RsrError) -> NoReturn:
    if is_rank_zero():
        error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
        if error_file:
            # Written before the line is printed: once any rank has exited the launcher may stop
            # this one at any moment. No py_callstack: the summary then shows the message itself,
            # not a traceback.
            data = {"message": {"message": f"error: {error}",
                                "extraInfo": {"timestamp": str(int(time.time()))}}}
            try:
                with open(error_file, "w") as f:
                    json.dump(data, f)
            except OSError:
                pass  # the line below still tells the user
        print(f"error: {error}", file=sys.stderr, flush=True)
    elif os.environ.get("TORCHELASTIC_ERROR_FILE"):
        # The launcher stops every rank as soon as one exits and names the earliest failure as
        # the root cause: let rank 0 report first, or a silent rank's exit would be named.
        time.sleep(RANK_ZERO_GRACE_SECONDS)
    sys.exit(USER_ERROR_EXIT)
