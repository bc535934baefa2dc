"""Safe file handling for run folders that may come from someone else (issue 14 items 2, 3).

- :func:`plain_name` validates a name that becomes one path component (a run id);
- :func:`slug_name` turns a free-form name (a rubric's) into a safe file stem;
- :func:`atomic_write_text` writes a file whole or not at all (temporary file + rename);
- :func:`disk_error` turns a full-disk ``OSError`` into one line naming the disk;
- :func:`escape_control_chars` makes untrusted text safe for a terminal or a report.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
from pathlib import Path

from .errors import InputError

__all__ = [
    "PLAIN_NAME",
    "plain_name",
    "slug_name",
    "atomic_write_text",
    "disk_error",
    "is_disk_full",
    "escape_control_chars",
    "json_loads_strict",
]

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""A run id: letters, digits, ``.``, ``_``, ``-``; starts with a letter or digit; at most 200 characters."""


def plain_name(value: str, what: str = "run_id") -> str:
    """``value`` when it is a plain folder name (:data:`PLAIN_NAME`: no ``/``,
    no ``..``, no leading dot, not empty); raises InputError naming ``what``
    otherwise (``"../victim"`` would move a run out of its folder)."""
    if not isinstance(value, str) or not PLAIN_NAME.fullmatch(value) or ".." in value:
        raise InputError(
            f"{value!r} is not a plain name (letters, digits, '.', '_', '-'; no '/' or '..')",
            what=what,
            fix="use a run id such as 20260101-120000-chemistry-ab12",
        )
    return value


def slug_name(name: str, what: str = "name") -> str:
    """A free-form name as a safe file stem: lower case, runs of anything but
    ``a-z0-9`` -> ``_`` (``"../../../rigor"`` -> ``"rigor"``, ``"Risk Awareness!"``
    -> ``"risk_awareness"``).  Raises InputError when nothing is left."""
    s = re.sub(r"[^a-z0-9]+", "_", (name or "").lower()).strip("_")[:120]
    if not s:
        raise InputError(
            f"{name!r} has no letters or digits",
            what=what,
            fix="use letters, digits and underscores, e.g. 'cost_awareness'",
        )
    return s


def _mount_point(path: Path) -> Path:
    p = path.resolve()
    while not p.exists():
        p = p.parent
    dev = p.stat().st_dev
    while p.parent != p and p.parent.stat().st_dev == dev:
        p = p.parent
    return p


def is_disk_full(e: BaseException) -> bool:
    """Whether ``e`` is a no-space / quota-exceeded OSError."""
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_error(e: OSError, path: str | Path) -> InputError:
    """One line for a failed write of ``path``: the disk (mount point) and its
    free space when the disk is full, else the OS reason."""
    p = Path(path)
    if is_disk_full(e):
        try:
            mp = _mount_point(p.parent)
            st = os.statvfs(mp)
            free = f"{st.f_bavail * st.f_frsize / 2**20:.1f} MiB free"
        except OSError:
            mp, free = p.parent, "free space unknown"
        return InputError(
            f"the disk holding {mp} is full ({free}); nothing was half-written",
            what=str(p),
            fix=f"free space on {mp} (or use --out on another disk), then `sgieval resume`",
        )
    return InputError(f"cannot write: {e.strerror or e}", what=str(p), fix="check the folder's permissions")


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` whole or not at all: a temporary file in the
    same folder, flushed and fsync'ed, renamed over ``path``.  On any error the
    old file is untouched and the temporary file removed; a full disk raises
    InputError naming the disk (:func:`disk_error`), other OS errors too."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise disk_error(e, p) from e
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


_CONTROL = re.compile(r"\r(?!\n)|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")


def escape_control_chars(text: str) -> str:
    """``text`` with NUL, ESC (terminal escape sequences) and every other C0/C1
    control character except newline, tab and a CR of a CRLF shown as a
    visible ``\\xNN`` escape, so untrusted text (program output, a shared
    run's request) cannot rewrite a terminal or hide text in a report.
    Printable text is unchanged."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


_NON_FINITE = re.compile(r"-?\b(?:NaN|Infinity)\b")


def json_loads_strict(text: str):
    """``json.loads`` for input files: ``NaN``/``Infinity`` (not JSON, though
    Python's parser accepts them) and nesting deeper than the interpreter's
    recursion limit raise ``json.JSONDecodeError`` (a ValueError) with the
    position, like any other bad JSON, instead of a silent NaN or a
    RecursionError traceback."""
    import json

    def no_constant(name: str):
        m = _NON_FINITE.search(text)
        raise json.JSONDecodeError(
            f"{name} is not a JSON number (write null or a finite number)", text, m.start() if m else 0
        )

    try:
        return json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise json.JSONDecodeError(
            "nested too deeply (more levels than the parser's recursion limit)", text, 0
        ) from None
