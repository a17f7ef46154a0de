"""`python -m rsr.rl CONFIG` (for `accelerate launch -m rsr.rl CONFIG`): same as `rsr rl`."""

import typer

from rsr.cli.rl import rl

if __name__ == "__main__":
    typer.run(rl)
