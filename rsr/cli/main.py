"""The `rsr` command line."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from rsr.errors import RsrError

app = typer.Typer(help="rsr: terminal tasks, harnesses, the RSR data factory, training and reports.",
                  no_args_is_help=True, pretty_exceptions_enable=False)


def _register() -> None:
    # Sub-apps are imported here so that `rsr --help` stays fast and a broken optional part
    # (e.g. training without the [train] extra) does not break the rest of the CLI.
    from rsr.cli import doctor, tasks

    app.add_typer(tasks.app, name="tasks")
    app.command("doctor")(doctor.doctor)

    from rsr.cli import listing  # light: the registry is imported when the command runs

    app.command("list")(listing.list_names)

    from rsr.cli import eval as eval_cli
    from rsr.cli import leaderboard, report

    app.add_typer(eval_cli.app, name="eval")
    app.add_typer(report.app, name="report")
    app.add_typer(leaderboard.app, name="leaderboard")

    from rsr.cli import regrade  # light: the verifier is imported when the command runs

    app.command("regrade")(regrade.regrade)

    from rsr.cli import review  # light: the detectors are imported when the command runs

    app.command("review")(review.review)

    from rsr.cli import train

    app.add_typer(train.app, name="train")

    from rsr.cli import factory

    app.add_typer(factory.app, name="factory")

    from rsr.cli import rl  # light: rsr.rl.grpo is imported when the command runs

    app.command("rl")(rl.rl)

    from rsr.cli import rounds  # light: rsr.rounds.loop is imported when the command runs

    app.add_typer(rounds.app, name="rounds")

    from rsr.cli import trajectories

    app.add_typer(trajectories.app, name="trajectories")

    from rsr.cli import images  # light: its commands import the sandbox modules when run

    app.add_typer(images.app, name="images")

    from rsr.cli import serve  # light: rsr.training.serve is imported when the command runs

    app.command("serve")(serve.serve)

    from rsr.cli import rehearse  # light: its steps run as their own processes

    app.command("rehearse")(rehearse.rehearse)


def main(argv: list[str] | None = None) -> int:
    _register()
    try:
        # The words as typed, for commands that print how to run them again (`rsr eval`'s resume).
        result = app(args=argv, standalone_mode=False,
                     obj={"argv": list(sys.argv[1:] if argv is None else argv)})
    except RsrError as e:
        from rich.markup import escape  # messages hold brackets: '.[train]', messages[2]

        # soft_wrap: a long path stays on one line (a terminal wraps it; a log keeps it whole).
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True)
        return 2
    except typer.Exit as e:
        return e.exit_code
    except SystemExit as e:
        return int(e.code or 0)
    except Exception as e:  # click usage errors arrive here in non-standalone mode
        import click

        # typer >= 0.20 vendors click: its usage errors are typer._click exceptions, which
        # are not click.ClickException but do subclass the public typer.TyperException.
        if isinstance(e, click.ClickException | typer.TyperException) and hasattr(e, "show"):
            e.show()
            return getattr(e, "exit_code", 2)
        raise
    # In non-standalone mode click returns the exit code of a `typer.Exit` instead of raising.
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
