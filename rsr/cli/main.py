"""The `rsr` command line."""

from __future__ import annotations

import signal
import sys

import typer
from rich.console import Console

from rsr.errors import PrerequisiteError, RsrError, plain_line

app = typer.Typer(help="rsr: terminal tasks, harnesses, the RSR data factory, training and reports.",
                  no_args_is_help=True, pretty_exceptions_enable=False)


def _register() -> None:
    if app.registered_groups:  # once: each call would add every sub-app again (main() in tests)
        return
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


def _one_line(message: str) -> None:
    from rich.markup import escape  # messages hold brackets: '.[train]', messages[2]

    # soft_wrap: a long path stays on one line (a terminal wraps it; a log keeps it whole).
    Console(stderr=True).print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)


def usage_message(e: Exception) -> str:
    """A click usage error as one line: what was wrong and where the valid options are listed
    (click's own form is four lines, usage first, the problem last)."""
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "rsr"
    message = e.format_message() if hasattr(e, "format_message") else str(e)
    message = " ".join(message.split()).rstrip(".")
    if "--help" in message:
        return f"{where}: {message}"
    return f"{where}: {message}; `{where} --help` lists what it takes"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. Every way out is one of: the command's own exit code; 2 with one line for
    anything the user can fix (an RsrError, a usage error, a path the OS refuses); or, for a bug
    in rsr itself, the traceback followed by a line saying that it is one."""
    from rsr.interrupts import RunInterrupted, interruptible

    _register()
    stopped = None
    try:
        # SIGTERM (a service manager, `timeout`, `kill`) is handled as Ctrl-C is, so every
        # engine, sandbox and log a command holds is stopped, cleaned up and marked.
        with interruptible(swallow=False) as stopped:
            # The words as typed, for commands that print how to run them again.
            result = app(args=argv, standalone_mode=False, prog_name="rsr",
                         obj={"argv": list(sys.argv[1:] if argv is None else argv)})
    except RunInterrupted as e:  # a run inside the command (rounds, factory) was stopped
        _one_line(str(e))
        return e.exit_code
    except RsrError as e:
        _one_line(str(e))
        return 2
    except PrerequisiteError as e:  # Inspect's own user errors (no API key...): rich markup, lines
        _one_line(plain_line(str(e)))
        return 2
    except typer.Exit as e:
        return e.exit_code
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else (_one_line(e.code) or 2)
    except KeyboardInterrupt:
        if stopped is not None and stopped.signum == signal.SIGTERM:
            _one_line("terminated (SIGTERM); rerun the same command to resume where it resumes")
            return 143
        _one_line("interrupted (Ctrl-C); rerun the same command to resume where it resumes")
        return 130
    except OSError as e:
        if not e.filename:
            return _bug(e)
        # A path the OS refuses (a file where a folder is needed, no permission, a full disk):
        # the user's to fix, and the path and the reason are all there is to say.
        where = f"{e.filename}" + (f" -> {e.filename2}" if e.filename2 else "")
        _one_line(f"{where}: {e.strerror or e}; choose another path or fix its permissions/space")
        return 2
    except Exception as e:  # click usage errors arrive here in non-standalone mode
        import click

        # typer >= 0.20 vendors click: its usage errors are typer._click exceptions, which
        # are not click.ClickException but do subclass the public typer.TyperException.
        if isinstance(e, click.ClickException | typer.TyperException) and hasattr(e, "show"):
            if type(e).__name__ == "Abort":
                _one_line("aborted")
                return 1
            message = e.format_message() if hasattr(e, "format_message") else str(e)
            if not message.strip():  # `rsr eval` alone: the help was the answer, no error to add
                if type(e).__name__ == "NoArgsIsHelpError" or not hasattr(e, "format_message"):
                    e.show()
                return getattr(e, "exit_code", 2) or 2
            _one_line(usage_message(e))
            return getattr(e, "exit_code", 2) or 2
        return _bug(e)
    # In non-standalone mode click returns the exit code of a `typer.Exit` instead of raising.
    return result if isinstance(result, int) else 0


def _bug(e: BaseException) -> int:
    """Anything else is rsr's own bug: the traceback is for its developers, and says so."""
    import traceback

    traceback.print_exception(e)
    _one_line(f"this is a bug in rsr, not a problem with your input ({type(e).__name__}); "
              "please report it with the traceback above")
    return 70


if __name__ == "__main__":
    sys.exit(main())
