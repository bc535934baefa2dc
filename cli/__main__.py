"""``python -m sgieval.cli``: the ``sgieval`` command."""

from .commands import app

app()
