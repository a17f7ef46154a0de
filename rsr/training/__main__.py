"""`python -m rsr.training RECIPE` — the entry point for `accelerate launch ... -m rsr.training`."""

from __future__ import annotations

import sys

from rsr.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["train", "run", *sys.argv[1:]]))
