"""The ``sgieval`` process around a command (:mod:`.commands`): start-up, the last-resort handler, exit codes (0
success, 1 internal failure, 2 bad input, 3 stopped at the metric confirmation)."""

from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path
from typing import Any

import platformdirs
import typer

from ..core import ConsoleProcess, SgievalError, disk_error, is_disk_full, redact_secrets
from .output import err, safe

__all__ = ["CommandLine"]


class CommandLine(typer.Typer):
    """The ``sgieval`` app: called without arguments it runs ``sys.argv`` inside :class:`sgieval.core.ConsoleProcess`,
    an exception no command handled becoming one line; called with arguments it is a plain Typer app."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return super().__call__(*args, **kwargs)
        argv = sys.argv[1:]  # ask, resume and report (not their --help) get the start-up sped up
        with ConsoleProcess(heavy=argv[:1] in (["ask"], ["resume"], ["report"]) and "--help" not in argv) as process:
            try:
                super().__call__()
            except SystemExit as e:
                process.exit(e.code)
            except Exception as e:  # noqa: BLE001 - the last resort: one line, the traceback in a log file
                process.exit(_last_resort(e))
            process.exit(0)


def _last_resort(e: BaseException) -> int:
    """Print one line for an exception that escaped every command (the traceback in ``<user log dir>/last-error.log``);
    the exit code: an SgievalError's own, 2 for a full disk, else 1."""
    if is_disk_full(e) and not isinstance(e, SgievalError):
        e = disk_error(e, getattr(e, "filename", None) or Path.cwd())  # type: ignore[arg-type]
    if isinstance(e, SgievalError):
        err.print(f"[bold red]error:[/] {safe(e.one_line())}", highlight=False, soft_wrap=True)
        return e.exit_code
    first = str(e).splitlines()[0] if str(e) else ""
    where = ""
    with contextlib.suppress(OSError):
        log = Path(platformdirs.user_log_dir("sgieval")) / "last-error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        text = redact_secrets("".join(traceback.format_exception(type(e), e, e.__traceback__)))
        log.write_text(text, encoding="utf-8")
        where = f" (the full traceback is in {log})"
    msg = f"unexpected {type(e).__name__}: {first}{where}"
    err.print(f"[bold red]error:[/] {safe(msg)}", highlight=False, soft_wrap=True)
    return 1
