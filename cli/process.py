"""The ``sgieval`` process around a command: start-up, the last-resort handler, exit codes.

Exit codes: 0 success, 1 internal failure, 2 bad input (missing data, bad file, unknown model string, a request
that selects nothing), 3 stopped at the metric confirmation.

The console script calls :data:`sgieval.cli.app` with no arguments: :class:`CommandLine` then runs the command
inside the start-up context (:class:`sgieval.core.startup.ConsoleProcess`: collector pause, warm worker, prompt
exit; ``SGIEVAL_FAST_START=0`` switches them off) and turns an exception no command handled into one line
(:func:`last_resort`).  The commands themselves are :mod:`.commands`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from ..core import SgievalError, disk_error, is_disk_full
from .output import err, safe

__all__ = ["CommandLine", "last_resort", "main", "run_begins", "writes_a_report"]


class CommandLine(typer.Typer):
    """The ``sgieval`` app.  Called with no arguments (the console script,
    ``python -m sgieval.cli``), the command reads ``sys.argv`` and the process
    runs inside the process start-up context (:class:`sgieval.core.startup.ConsoleProcess`); called
    with arguments (``app(["ask", ...])``) it behaves as a plain Typer app and
    raises SystemExit as usual.  As the console script, an exception no
    command turned into one line is one line too (:func:`last_resort`), never
    a traceback on the terminal."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return super().__call__(*args, **kwargs)
        from ..core import ConsoleProcess

        # this process is ours: its start-up and exit (core.startup; SGIEVAL_FAST_START=0 switches them off)
        with ConsoleProcess(heavy=writes_a_report(sys.argv[1:])) as process:
            try:
                super().__call__()
            except SystemExit as e:
                process.exit(e.code)
            except Exception as e:  # noqa: BLE001 - the last resort: one line, the traceback in a log file
                process.exit(last_resort(e))
            process.exit(0)


def run_begins() -> None:
    """The run starts: the console script's start-up is over (:func:`sgieval.core.startup.run_begins` ends its
    collector pause).  Called by the commands that run an evaluation, when the run begins."""
    from ..core import run_begins as end_start_up

    end_start_up()


def writes_a_report(argv: list[str]) -> bool:
    """Whether the command line ``argv`` (without the program) runs ``ask``, ``resume`` or ``report``
    (not their ``--help``): the commands whose start-up the console script speeds up."""
    return bool(argv) and argv[0] in ("ask", "resume", "report") and "--help" not in argv


def last_resort(e: BaseException) -> int:
    """Print one line for an exception that escaped every command, never a traceback on the terminal.

    The full traceback goes to ``<user log dir>/last-error.log`` (``platformdirs.user_log_dir``), which the line
    names.

    Args:
        e: the exception.

    Returns:
        The exit code: the error's own for an SgievalError (2 for bad input), 2 for a full disk, else 1.
    """
    import traceback

    import platformdirs

    if isinstance(e, SgievalError):
        err.print(f"[bold red]error:[/] {safe(e.one_line())}", highlight=False, soft_wrap=True)
        return e.exit_code
    if is_disk_full(e):
        d = disk_error(e, getattr(e, "filename", None) or Path.cwd())  # type: ignore[arg-type]
        err.print(f"[bold red]error:[/] {safe(d.one_line())}", highlight=False, soft_wrap=True)
        return d.exit_code
    first = str(e).splitlines()[0] if str(e) else ""
    where = ""
    try:
        from ..core import redact_secrets

        log = Path(platformdirs.user_log_dir("sgieval")) / "last-error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(
            redact_secrets("".join(traceback.format_exception(type(e), e, e.__traceback__))), encoding="utf-8"
        )
        where = f" (the full traceback is in {log})"
    except OSError:
        pass
    err.print(
        f"[bold red]error:[/] {safe(f'unexpected {type(e).__name__}: {first}{where}')}",
        highlight=False,
        soft_wrap=True,
    )
    return 1


def main() -> None:  # pragma: no cover
    """The command-line entry point: the ``sgieval`` app read from ``sys.argv`` (start-up and exit:
    :class:`CommandLine`)."""
    from .commands import app

    app()
