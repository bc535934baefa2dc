"""Safe file handling for run folders that may come from someone else: safe names, whole-or-nothing writes, full-disk
errors, terminal-safe text, strict JSON and JSONL, lone surrogates, and the ``*_in`` functions that read and write a
run folder's files without following a symbolic link at any depth below it (each component opened ``O_NOFOLLOW``
relative to its parent's descriptor; a write goes to a fresh temporary name renamed over the target)."""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath
from typing import BinaryIO, Iterator

from .errors import InputError

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""A run id: letters, digits, ``.``, ``_``, ``-``; starts with a letter or digit; at most 200 characters."""


def slug_name(name: str, what: str = "name") -> str:
    """A free-form name as a safe file stem: lower case, runs of anything but ``a-z0-9`` -> ``_``.

    Args:
        name: the name.
        what: what it names, in the error.

    Returns:
        The slug.

    Raises:
        InputError: when nothing is left.
    """
    s = re.sub(r"[^a-z0-9]+", "_", (name or "").lower()).strip("_")[:120]
    if not s:
        raise InputError(
            f"{name!r} has no letters or digits",
            what=what,
            fix="use letters, digits and underscores, e.g. 'cost_awareness'",
        )
    return s


def is_disk_full(e: BaseException) -> bool:
    """Whether ``e`` is a no-space / quota-exceeded OSError.

    Args:
        e: an exception.

    Returns:
        True for a full disk or quota.
    """
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_error(e: OSError, path: str | Path) -> InputError:
    """One line for a failed write of ``path``: the disk and its free space when full, else the OS reason.

    Args:
        e: the OSError.
        path: the file that was written.

    Returns:
        The InputError.
    """
    p = Path(path)
    if is_disk_full(e):
        try:
            mp = p.parent.resolve()
            while not os.path.ismount(mp):  # a missing folder is no mount point either
                mp = mp.parent
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


def atomic_write_text(path: str | Path, text: str, *, root: str | Path | None = None) -> Path:
    """Write ``text`` to ``path`` whole or not at all (a fsync'ed temporary file renamed over it).

    Args:
        path: the file.
        text: the text (written as UTF-8).
        root: the run folder ``path`` lies in; then no link below it is followed (:func:`write_text_in`).

    Returns:
        ``path``.

    Raises:
        InputError: a full disk (:func:`disk_error`) or another OS error; the old file is then untouched.
    """
    if root is not None:
        return write_text_in(root, path, text)
    text = _repair_text(text)[0]  # a lone surrogate (from a model's reply) becomes U+FFFD, never a failed write
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException as e:
        with suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise disk_error(e, p) from e
        raise
    return p


_CONTROL = re.compile(r"\r(?!\n)|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")


def escape_control_chars(text: str) -> str:
    """``text`` with every C0/C1 control character except newline, tab and the CR of a CRLF as a visible ``\\xNN``
    escape, so untrusted text cannot rewrite a terminal or hide text in a report.

    Args:
        text: untrusted text.

    Returns:
        The escaped text.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


_NON_FINITE = re.compile(r"-?\b(?:NaN|Infinity)\b")


def json_loads_strict(text: str):
    """``json.loads`` for input files: ``NaN``/``Infinity`` and nesting deeper than :data:`MAX_JSON_DEPTH` (or the
    recursion limit) raise ``json.JSONDecodeError`` with the position, like any other bad JSON.

    Args:
        text: JSON text.

    Returns:
        The value.
    """

    def no_constant(name: str):
        m = _NON_FINITE.search(text)
        raise json.JSONDecodeError(
            f"{name} is not a JSON number (write null or a finite number)", text, m.start() if m else 0
        )

    try:
        data = json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise json.JSONDecodeError(
            "nested too deeply (more levels than the parser's recursion limit)", text, 0
        ) from None
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise json.JSONDecodeError(
            f"nested too deeply ({depth} levels of arrays and objects; at most {MAX_JSON_DEPTH} are read)", text, 0
        )
    return data


MAX_JSON_DEPTH = 100
"""The deepest JSON nesting an input file may have (deeper is no benchmark item, and would hit the recursion limit)."""


def json_depth(value: object) -> int:
    """Levels of nested lists/dicts in ``value`` (a scalar: 0, ``[]``: 1, ``[[1]]``: 2), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v) if isinstance(c, (dict, list)))
    return deepest


def split_jsonl(text: str) -> list[str]:
    """The lines of JSONL ``text``, split on ``\n`` only (a ``\r`` before it dropped): ``str.splitlines`` would also
    split at U+2028, U+2029, U+0085 and other separators JSON strings allow (RFC 8259 s. 7).

    Args:
        text: JSONL text.

    Returns:
        The lines.
    """
    lines = text.split("\n")
    return [ln.removesuffix("\r") for ln in (lines[:-1] if lines[-1] == "" else lines)]


# ------------------------------------------------------------------ run folder files: no link followed
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted in a run folder must not hang a read


def link_error(root: str | Path, links: list[str]) -> InputError:
    """The one-line error for symbolic links ``links`` (paths relative to the run folder ``root``)."""
    return InputError(
        f"the run folder holds symbolic link(s) {', '.join(links)}: writing there could change files outside the run",
        what=str(root),
        fix="replace each link by the file it points to (or remove it), then retry",
    )


def find_links(root: str | Path) -> list[str]:
    """Every symbolic link at any depth below ``root``, found without following one.

    Args:
        root: the folder.

    Returns:
        Relative paths with ``/``, sorted; ``[]`` when ``root`` does not exist.
    """

    def unreadable(e: OSError) -> None:
        if not isinstance(e, (FileNotFoundError, NotADirectoryError)):
            raise e

    out: list[str] = []
    for d, dirs, files in os.walk(root, onerror=unreadable):  # a link to a folder is listed, not entered
        rel = PurePath(d).relative_to(root)
        out += [(rel / n).as_posix() for n in [*dirs, *files] if os.path.islink(os.path.join(d, n))]
    return sorted(out)


def _parts(root: str | Path, path: str | Path) -> list[str]:
    """``path`` (absolute under ``root``, or relative to it) as its components below ``root``."""
    p = PurePath(path)
    rel = p.relative_to(root) if p.is_absolute() or PurePath(root) in p.parents else p
    parts = list(rel.parts)
    if not parts or any(x in ("", ".", "..") for x in parts) or rel.is_absolute():
        raise ValueError(f"{path} is not a path below the run folder {root}")
    return parts


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_at(root: str | Path, parts: list[str], flags: int, dfd: int) -> int:
    """``os.open`` of ``parts[-1]`` in ``dfd`` without following a link; InputError (:func:`link_error`) for a link."""
    try:
        return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=dfd)
    except OSError:
        if _is_link(parts[-1], dfd):
            raise link_error(root, ["/".join(parts)]) from None
        raise


@contextmanager
def _folder(root: str | Path, dirs: list[str], *, create: bool) -> Iterator[int]:
    """A descriptor of ``root/dirs...``, each ``O_NOFOLLOW`` in its parent (``create``: made); InputError: a link."""
    if create:
        Path(root).mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for i, name in enumerate(dirs):
            if create:
                with suppress(FileExistsError):  # a link stays: _open_at refuses it
                    os.mkdir(name, 0o777, dir_fd=fd)
            nfd = _open_at(root, dirs[: i + 1], os.O_RDONLY | _DIRECTORY, fd)
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def write_bytes_in(root: str | Path, path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` in the run folder ``root`` whole or not at all, following no link below ``root``
    (missing folders made; a fresh temporary name, fsync'ed and renamed over the target).

    Args:
        root: the run folder (its own path may be a link).
        path: the file, absolute under ``root`` or relative to it.
        data: the file's new content.

    Returns:
        ``root / <path relative to root>``.

    Raises:
        InputError: a symbolic link on the way (:func:`link_error`); a full disk or another OS error (:func:`disk_error`).
    """
    *dirs, name = _parts(root, path)
    target = Path(root, *dirs, name)
    try:
        with _folder(root, dirs, create=True) as dfd:
            if _is_link(name, dfd):
                raise link_error(root, ["/".join([*dirs, name])])
            tmp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                raise
    except OSError as e:
        raise disk_error(e, target) from e
    return target


def write_text_in(root: str | Path, path: str | Path, text: str) -> Path:
    """:func:`write_bytes_in` of ``text`` as UTF-8; a lone surrogate is written as U+FFFD (:func:`_repair_text`).

    Args:
        root: the run folder.
        path: the file.
        text: the text.

    Returns:
        The path written.
    """
    return write_bytes_in(root, path, _repair_text(text)[0].encode("utf-8"))


def read_bytes_in(root: str | Path, path: str | Path, *, single_link: bool = False) -> bytes:
    """The bytes of ``path`` in the run folder ``root``, following no link below ``root``.

    Args:
        root: the run folder.
        path: the file, inside ``root``.
        single_link: refuse a file with other hard links too.

    Returns:
        The bytes.

    Raises:
        InputError: ``path`` or a folder on the way is a link; no regular file; ``single_link`` and other links.
        OSError: it cannot be read (FileNotFoundError: it does not exist).
    """
    with _open_in(root, path, os.O_RDONLY, "rb") as f:
        if single_link and os.fstat(f.fileno()).st_nlink > 1:
            rel = "/".join(_parts(root, path))
            raise InputError(
                f"{rel} has other hard links: sgieval copies only files written in the run folder",
                what=str(root),
                fix="replace it by a copy of the file (cp, not ln), or remove it",
            )
        return f.read()


def read_text_in(root: str | Path, path: str | Path) -> str:
    """:func:`read_bytes_in` decoded as UTF-8.

    Args:
        root: the run folder.
        path: the file.

    Returns:
        The text.
    """
    return read_bytes_in(root, path).decode("utf-8")


def _open_in(root: str | Path, path: str | Path, flags: int, mode: str) -> BinaryIO:
    *dirs, name = _parts(root, path)
    with _folder(root, dirs, create=bool(flags & os.O_CREAT)) as dfd:
        fd = _open_at(root, [*dirs, name], flags | _NONBLOCK, dfd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO, a device, a socket
            os.close(fd)
            raise InputError(
                f"{'/'.join([*dirs, name])} is not a regular file",
                what=str(root),
                fix="replace it by the file sgieval wrote, or remove it",
            )
    return os.fdopen(fd, mode)  # type: ignore[return-value]


def open_append_in(root: str | Path, path: str | Path) -> BinaryIO:
    """``path`` in the run folder ``root`` opened for binary appends (created when missing), following no link.

    Args:
        root: the run folder.
        path: the file.

    Returns:
        The open file.

    Raises:
        InputError: a link; OSError when it cannot be opened.
    """
    return _open_in(root, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "ab")


def open_update_in(root: str | Path, path: str | Path) -> BinaryIO:
    """``path`` in the run folder ``root`` opened ``rb+`` (it must exist), following no link below ``root``."""
    return _open_in(root, path, os.O_RDWR, "rb+")


def replace_dir_in(root: str | Path, path: str | Path) -> Path:
    """Empty the folder ``path`` in the run folder ``root`` (removed, links never followed, then made again).

    Args:
        root: the run folder.
        path: the folder emptied.

    Returns:
        The folder.

    Raises:
        InputError: it or a folder on the way is a link.
    """
    *dirs, name = _parts(root, path)
    with _folder(root, dirs, create=True) as dfd:
        if _is_link(name, dfd):
            raise link_error(root, ["/".join([*dirs, name])])
        with suppress(FileNotFoundError):
            shutil.rmtree(name, dir_fd=dfd)
        os.mkdir(name, 0o777, dir_fd=dfd)
    return Path(root, *dirs, name)


# ------------------------------------------------------------------ lone surrogates
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (valid JSON, not writable as UTF-8), a split pair too.

    Args:
        text: any text.

    Returns:
        The index, or None.
    """
    if text.isascii():
        return None
    m = _SURROGATE.search(text)
    return m.start() if m else None


def _repair_text(text: str) -> tuple[str, bool]:
    """``(text with every lone surrogate as U+FFFD (a split high + low pair joined), changed)``."""
    if lone_surrogate(text) is None:
        return text, False
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace"), True


def repair_deep(value: object) -> tuple[object, bool]:
    """:func:`_repair_text` on every string, key and element in ``value``: (repaired value or ``value``, changed)."""
    if isinstance(value, str):
        return _repair_text(value)
    if isinstance(value, dict):
        pairs = [(repair_deep(k), repair_deep(v)) for k, v in value.items()]
        if any(ck or cv for (_, ck), (_, cv) in pairs):
            return {k: v for (k, _), (v, _) in pairs}, True
    elif isinstance(value, (list, tuple)):
        items = [repair_deep(v) for v in value]
        if any(c for _, c in items):
            return type(value)(v for v, _ in items), True
    return value, False
