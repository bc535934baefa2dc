"""cli: the ``sgieval`` command (typer + rich): its commands (:mod:`.commands`, :mod:`.view`, :mod:`.metric`,
:mod:`.labels`), progress display (:mod:`.progress`) and the process around a command (:mod:`.process`: start-up,
the last-resort handler, exit codes).

The console script (``sgieval``, pyproject ``[project.scripts]``) and ``python -m sgieval.cli`` call :data:`app`.
"""

from __future__ import annotations

from .commands import app, options_command

__all__ = ["app", "options_command"]
