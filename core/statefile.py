"""A run's checkpoint database (``state.sqlite``) read as data: without a file made or changed in its folder."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import InputError
from .store import run_holder


@contextlib.contextmanager
def read_sqlite(path: str | Path) -> Iterator[Any]:
    """A read-only ``sqlite3`` connection to a run's ``state.sqlite`` that creates, modifies and leaves no file in its
    folder (``mode=ro`` alone leaves ``-wal``/``-shm`` files, https://www.sqlite.org/wal.html): ``mode=ro`` while
    another process runs the run, a temporary copy with a non-empty ``-wal``, else ``immutable=1``.

    Args:
        path: the database file.

    Returns:
        A context manager yielding the connection (closed on exit, any temporary copy removed).

    Raises:
        InputError: the file (or its ``-wal``) cannot be read, naming it, with the fix.
    """
    db = Path(path).absolute()
    wal = db.with_name(db.name + "-wal")
    for f in (db, wal):
        try:
            with open(f, "rb") as fh:
                fh.read(1)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise InputError(
                f"cannot read the run's graph state ({e.strerror or e})",
                what=str(f),
                fix="make the file readable (`chmod a+r`), or work on a readable copy of the run folder",
            ) from None
    live = run_holder(db.parent) is not None
    try:
        has_wal = not live and os.stat(wal, follow_symlinks=False).st_size > 0
    except FileNotFoundError:
        has_wal = False
    with contextlib.ExitStack() as stack:
        uri = f"{db.as_uri()}?mode=ro" if live else f"{db.as_uri()}?immutable=1"
        if has_wal:
            copy = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sgieval-state-"))) / "state.sqlite"
            shutil.copyfile(db, copy)
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            uri = f"{copy.as_uri()}?mode=ro"
        yield stack.enter_context(contextlib.closing(sqlite3.connect(uri, uri=True, check_same_thread=False)))


def check_state_file(path: str | Path) -> None:
    """Check that ``path`` (a run's ``state.sqlite``), when present and non-empty, is a readable SQLite database.

    Args:
        path: the run's ``state.sqlite``.

    Raises:
        InputError: a damaged file (truncated, garbage), with the fix.
    """
    p = Path(path)
    if not p.is_file():
        return
    try:
        with read_sqlite(p) as db:
            db.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as e:
        raise InputError(
            f"the run's graph state is unreadable ({e})",
            what=str(p),
            fix=f"restore it from a backup, or move it away and run `sgieval resume {p.parent}`: the "
            "run is planned again and every stored response and score is kept",
        ) from None
