"""cli: the ``sgieval`` command (typer + rich); the console script and ``python -m sgieval.cli`` call :data:`app`."""

from __future__ import annotations

from .commands import app, options_command

__all__ = ["app", "options_command"]
