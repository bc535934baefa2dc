"""What the ``sgieval`` command prints: its two consoles and the one way an untrusted text or an error is shown."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from ..core import SgievalError, escape_control_chars

__all__ = ["err", "exit_on_error", "fail", "out", "safe"]

err = Console(stderr=True)
out = Console()


def safe(value: object) -> str:
    """``value`` as text safe to print with rich (every untrusted text goes through it).

    Args:
        value: any object; its ``str()`` is shown.

    Returns:
        The text, control characters shown as ``\\xNN`` and rich markup (``[/]``, ``[bold]``) literally.
    """
    return escape(escape_control_chars(str(value)))


def fail(e: SgievalError) -> NoReturn:
    """Print ``e`` as one error line on stderr and end the command with its exit code.

    Args:
        e: the error (its :meth:`~sgieval.core.SgievalError.one_line` names the file, the field and the fix).

    Raises:
        typer.Exit: always, with ``e.exit_code`` (2 for bad input).
    """
    err.print(f"[bold red]error:[/] {safe(e.one_line())}", highlight=False, soft_wrap=True)
    raise typer.Exit(e.exit_code)


@contextlib.contextmanager
def exit_on_error() -> Iterator[None]:
    """Run the body; an SgievalError it raises ends the command through :func:`fail`.

    Yields:
        Nothing.

    Raises:
        typer.Exit: the body raised an SgievalError.
    """
    try:
        yield
    except SgievalError as e:
        fail(e)
