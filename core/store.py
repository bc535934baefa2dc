"""The run store: run folder I/O (``runs/<run_id>/``), append-only JSONL records."""

from __future__ import annotations

import json
import os
import weakref
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO, Sequence

from pydantic import BaseModel

from .errors import InputError, validation_errors_text
from .files import atomic_write_text, find_links, link_error, open_append_in, open_update_in, read_bytes_in
from .files import read_text_in, slug_name, split_jsonl
from .records import Item, Label, Response, Score
from .runconfig import RunConfig
from .secrets import SecretValues, redact_url
from .trust import remember, remember_run

# ------------------------------------------------------------------ run folder
BUDGET_STOP_NOTE = "The run stopped at its budget"
"""How a report says its run stopped at the budget (``sgieval runs`` and ``resume`` look for it)."""

REPORT_PENDING = ".report-pending"
"""Marker file while a run's report is (re)written: ``sgieval runs`` lists the run as incomplete meanwhile."""


RUN_LOCK = ".run.lock"
"""Lock file of a run folder: the running process holds its exclusive ``flock`` and writes its pid in it."""


def run_holder(root: str | Path) -> int | None:
    """The pid of another live process running the run in ``root`` (holding :data:`RUN_LOCK`); read-only.

    Args:
        root: the run folder.

    Returns:
        The pid; -1 when its pid cannot be read; None: nobody else holds it.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform: no check
        return None
    path = Path(root) / RUN_LOCK
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        pid = int(text) if text.isdigit() else -1
        if pid == os.getpid():
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released by the close below
        except OSError:
            return pid
        return None
    finally:
        os.close(fd)


def _in_use(root: Path, holder: int | None) -> InputError:
    """The one-line error for a run folder another process holds."""
    return InputError(
        f"the run folder is in use by another sgieval process (pid {holder if holder and holder > 0 else '?'})",
        what=str(root),
        fix="wait until that run ends (`sgieval runs` lists it as running), or stop it first",
    )


def _release(lock: list[int]) -> None:
    """Close the held lock file's descriptor (which releases its flock), once."""
    while lock:
        with suppress(OSError):
            os.close(lock.pop())


_OPEN: "weakref.WeakSet[RunStore]" = weakref.WeakSet()
"""Run stores holding open JSONL files (for :func:`sync_open_stores`)."""


def sync_open_stores() -> None:
    """Flush, fsync and close the JSONL files of every RunStore of this process (before an exit without teardown)."""
    for store in list(_OPEN):
        store.close()


def _close_files(files: dict[str, BinaryIO]) -> None:
    for f in files.values():
        with suppress(OSError):
            f.close()
    files.clear()


class RunStore:
    """The run folder ``<out_dir>/<run_id>/``: append-only JSONL records (one per line, flushed as produced, so a
    killed run loses nothing written; a torn last line is dropped on read and truncated before the next append) and
    ``config.json``. :meth:`read` keeps a file's records with its size and re-reads only when another writer changed it.
    """

    FILES: dict[str, type[BaseModel]] = {
        "items": Item,
        "responses": Response,
        "scores": Score,
        "labels": Label,
        "added_judge_scores": Score,
    }
    """The record files; ``added_judge_scores`` holds the scores of judges added to a finished run (``ask --into``)."""
    JOURNALS = ("ledger", "inflight", "invocations", "prompts")
    """Plain-dict JSONL files (:meth:`append_rows`): ``ledger`` (one model call per line), ``inflight`` (a call about
    to send), ``invocations`` (one per ``ask``/``resume``/``ask --into``), ``prompts`` (one judge prompt per hash)."""

    WRITTEN = (
        *(f"{n}.jsonl" for n in ("items", "responses", "scores", "added_judge_scores", *JOURNALS, "labels")),
        *("batches.json", "batches", "config.json", "report.md", "report.json"),
        *(f"state.sqlite{s}" for s in ("", "-wal", "-shm", "-journal")),
        *("log.jsonl", RUN_LOCK, "figures", "rubrics", REPORT_PENDING),
    )
    """Names sgieval writes in a run folder: none may be a symbolic link (it could point outside the run)."""

    def __init__(self, root: str | Path, *, read_only: bool = False):
        """Open the run folder ``root``.

        Args:
            root: the run folder; made when missing (unless ``read_only``).
            read_only: read the folder as data: nothing in it is created, repaired or modified; writes raise.

        Raises:
            InputError: the folder is missing (``read_only``), another process runs the run in it, or holds a link.
        """
        self.root = Path(root)
        self.read_only = read_only
        self.created = not self.root.exists()
        """True when this RunStore made the folder: only then may its caller remove it."""
        self.problems: list[str] = []
        """Records that could not be read, one line each (file, line, reason)."""
        if read_only:
            if not self.root.is_dir():
                raise InputError("no such run folder", what=str(self.root), fix="give the folder of a run")
        else:
            self.root.mkdir(parents=True, exist_ok=True)
        holder = run_holder(self.root)
        if holder is not None:  # never repair or append to the files of a run another process is writing
            raise _in_use(self.root, holder)
        self._lock: list[int] = []  # the held lock file's descriptor (hold), closed by close or the finalizer
        links = find_links(self.root)  # at any depth: figures/, export/, viewer/, rubrics/ included
        if links:
            order = {n: k for k, n in enumerate(self.WRITTEN)}
            links.sort(key=lambda r: (order.get(r.split("/", 1)[0], len(order)), r))
            raise link_error(self.root, links)
        if not read_only:
            with suppress(FileExistsError):
                os.mkdir(self.root / "figures")
            for name in (*self.FILES, *self.JOURNALS):
                self._repair(name)
        self._files: dict[str, BinaryIO] = {}
        self._records: dict[str, tuple[int, list[Any]]] = {}  # name -> (file size seen, its records)
        self.invocation: str | None = None
        """The id of the invocation writing the run (set by the run), stamped on each Response and Score appended."""
        self._prompt_hashes: set[str] | None = None  # hashes in prompts.jsonl (read on the first score appended)
        self.secrets = SecretValues()
        """The run's secret values (set by the run): every record and row appended is masked by value before it is
        written, so a key a server or a tool echoes never reaches a file of the run."""
        weakref.finalize(self, _close_files, self._files)  # the finalize registry keeps it alive

    def path(self, name: str) -> Path:
        """The file of the record kind or journal ``name`` in the run folder.

        Args:
            name: a record kind or a journal.

        Returns:
            ``<run folder>/<name>.jsonl``.
        """
        return self.root / f"{name}.jsonl"

    def _writable(self) -> None:
        """Raise when this store reads the folder only (``read_only``)."""
        if self.read_only:
            raise RuntimeError(f"{self.root}: this RunStore reads the run folder only (read_only=True)")

    def _read_file(self, p: Path) -> bytes:
        """The bytes of ``p`` (no link followed) up to its last newline; b"" when missing; InputError: unreadable."""
        try:
            data = read_bytes_in(self.root, p)
        except FileNotFoundError:
            return b""
        except OSError as e:  # permission denied, an I/O error
            raise InputError(
                f"cannot read the run's {p.name} ({e.strerror or e})",
                what=str(p),
                fix="make the file readable (`chmod a+r`), or work on a readable copy of the run folder",
            ) from None
        return data[: data.rfind(b"\n") + 1]

    def _repair(self, name: str) -> None:
        """Truncate ``name``.jsonl after its last newline (a torn last line)."""
        try:
            f = open_update_in(self.root, self.path(name))
        except FileNotFoundError:
            return
        with f:
            if f.seek(0, 2) == 0:
                return
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.seek(0)
                f.truncate(f.read().rfind(b"\n") + 1)

    def _write(self, name: str, data: bytes) -> int:
        """Append ``data`` to ``name``.jsonl through its open file and flush; the file's size after the write."""
        self._writable()
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = open_append_in(self.root, self.path(name))
            _OPEN.add(self)
        f.write(data)
        f.flush()
        return f.tell()

    def append(self, name: str, records: Sequence[BaseModel]) -> None:
        """Append records as JSON lines and flush (masked by :attr:`secrets`); a Score's judge prompts go first to
        ``prompts.jsonl``, once per hash.

        Args:
            name: the record kind.
            records: the records.
        """
        if not records:
            return
        if self.invocation is not None:
            records = [
                r.model_copy(update={"invocation": self.invocation})
                if isinstance(r, (Response, Score)) and r.invocation is None
                else r
                for r in records
            ]
        if name in ("scores", "added_judge_scores"):
            self._keep_prompts(records)
        elif name == "responses":
            records = self._move_prompts(records)
        lines = [r.model_dump_json() for r in records]
        if self.secrets:  # masked by value: the kept records are the masked ones too
            records = list(records)
            for i, line in enumerate(lines):
                if self.secrets.holds_any(line):
                    lines[i] = self.secrets.mask(line)
                    records[i] = type(records[i]).model_validate_json(lines[i])
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        end = self._write(name, data)
        known = self._records.pop(name, None)
        if known is not None and known[0] + len(data) == end:  # nobody else wrote in between: they stay exact
            known[1].extend(records)  # in place: read() hands out copies only
            self._records[name] = (end, known[1])

    def _keep_prompts(self, scores: Sequence[BaseModel]) -> None:
        """Append to ``prompts.jsonl`` each prompt of the scores' evidence whose hash it does not hold yet."""
        evidence = [e for s in scores for e in getattr(s, "evidence", None) or []]
        sent = [p for e in evidence for p in [getattr(e, "prompt", None), *(getattr(e, "prompts", None) or [])]]
        self._write_prompts([p for p in sent if isinstance(p, dict)])

    def _move_prompts(self, responses: Sequence[BaseModel]) -> list[BaseModel]:
        """The responses with their ``metadata["judge_prompts"]`` moved to ``prompts.jsonl`` (once per hash)."""
        out: list[BaseModel] = []
        found: list[dict[str, Any]] = []
        for r in responses:
            md = getattr(r, "metadata", None)
            if isinstance(md, dict) and isinstance(md.get("judge_prompts"), dict):
                found += [p for p in md["judge_prompts"].values() if isinstance(p, dict)]
                r = r.model_copy(update={"metadata": {k: v for k, v in md.items() if k != "judge_prompts"}})
            out.append(r)
        self._write_prompts(found)
        return out

    def _write_prompts(self, prompts: list[dict[str, Any]]) -> None:
        """Append each prompt record whose hash ``prompts.jsonl`` does not hold yet."""
        if not prompts:
            return
        if self._prompt_hashes is None:
            self._prompt_hashes = {str(r.get("hash")) for r in self.read_rows("prompts")}
        new: list[dict[str, Any]] = []
        for p in prompts:
            if p.get("hash") and p["hash"] not in self._prompt_hashes:
                self._prompt_hashes.add(p["hash"])
                new.append(p)
        self.append_rows("prompts", new)

    def prompts(self) -> dict[str, dict[str, Any]]:
        """The run's judge prompts (``prompts.jsonl``), the first line of a hash counting.

        Returns:
            ``{hash: {"hash", "messages", "response_format"?, "tools"?}}``; {} without the file.
        """
        out: dict[str, dict[str, Any]] = {}
        for r in self.read_rows("prompts"):
            h = r.get("hash")
            if isinstance(h, str) and h and isinstance(r.get("messages"), list):
                out.setdefault(h, r)
        return out

    def append_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Append JSON-ready dicts to the journal ``name`` (one of :attr:`JOURNALS`) and flush.

        Args:
            name: the journal.
            rows: the rows.
        """
        if not rows:
            return
        if self.secrets:
            rows = [self.secrets.mask_data(r) for r in rows]
        self._write(name, "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"))

    def read_rows(self, name: str) -> list[dict[str, Any]]:
        """Every dict of the journal ``name``; a line that is not JSON is skipped and named.

        Args:
            name: the journal.

        Returns:
            The rows.
        """
        p = self.path(name)
        text = self._read_file(p).decode("utf-8", errors="replace")
        out = []
        for n, line in enumerate(split_jsonl(text), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as e:
                self._skipped(p, n, f"not JSON ({str(e).splitlines()[0][:120]})")
                continue
            if isinstance(row, dict):
                out.append(row)
        return out

    def _skipped(self, p: Path, n: int, reason: str) -> None:
        """Note an unreadable record once per file and line: in :attr:`problems` and logged as a warning."""
        msg = f"{p} line {n}: {reason}; the record is skipped (fix: correct or delete that line)"
        if msg in self.problems:
            return
        self._note(msg)
        from .logs import get_logger  # structlog loads only when a record is unreadable

        with suppress(OSError, ValueError):  # a logging sink that is gone must not make the run unreadable
            get_logger("sgieval").warning("unreadable record skipped", file=str(p), line=n, reason=reason)

    KEYS: dict[str, tuple[str, ...]] = {
        "items": ("id",),
        "responses": ("item_id", "model"),
        "scores": ("item_id", "model", "metric"),
        "added_judge_scores": ("item_id", "model", "metric", "judge"),
    }
    """The fields identifying a record of each file (``labels``: all kept, the latest counts)."""

    def read(self, name: str) -> list[Any]:
        """All records of ``name`` as a new list of shared records (do not mutate them). An invalid line is skipped
        and named in :attr:`problems`; a lone surrogate escape is repaired to U+FFFD and the record flagged
        ``text_repaired``; a line repeating an earlier record of the same key (:attr:`KEYS`) is left out.

        Args:
            name: the record kind.

        Returns:
            The records.

        Raises:
            InputError: two lines hold different records of the same key (naming the file, both lines and the key).
        """
        p = self.path(name)
        try:
            size = os.stat(p, follow_symlinks=False).st_size
        except FileNotFoundError:
            size = 0
        known = self._records.get(name)
        if known is not None and known[0] == size:
            return list(known[1])
        data = self._read_file(p) if size else b""
        cls = self.FILES[name]
        fields = self.KEYS.get(name, ())
        seen: dict[tuple[Any, ...], tuple[int, str, Any]] = {}
        out = []
        for n, line in enumerate(split_jsonl(data.decode("utf-8", errors="replace")), 1):
            if not line.strip():
                continue
            try:
                rec = cls.model_validate_json(line)
            except (ValueError, RecursionError) as e:
                rec = _validate_escaped(cls, line)
                if rec is None:
                    reason = validation_errors_text(e, most=3) or type(e).__name__
                    self._skipped(p, n, f"not a valid {cls.__name__} record ({reason[:200]})")
                    continue
            key = tuple(getattr(rec, f) for f in fields) or (n,)  # labels: each line its own key
            first = seen.get(key)
            if first is None:
                seen[key] = (n, line, rec)
                out.append(rec)
                continue
            m, first_line, first_rec = first
            ex = {"invocation"} if isinstance(rec, (Response, Score)) else None  # whichever invocation wrote each
            if line == first_line or rec.model_dump_json(exclude=ex) == first_rec.model_dump_json(exclude=ex):
                self._note(f"{p} line {n}: repeats line {m} (the same {cls.__name__} record); counted once")
                continue
            raise InputError(
                f"lines {m} and {n} hold two different {cls.__name__} records for "
                + ", ".join(f"{f} {v!r}" for f, v in zip(fields, key)),
                what=str(p),
                fix="keep the right one of the two lines and delete the other, then retry",
            )
        self._records[name] = (len(data), out)
        return list(out)

    def _note(self, msg: str) -> None:
        """Keep ``msg`` (once) in :attr:`problems`."""
        if msg not in self.problems:
            self.problems.append(msg)

    def hold(self) -> None:
        """Take the run folder for this process: an exclusive ``flock`` on :data:`RUN_LOCK`, released by :meth:`close` or
        process end; InputError when another holds it."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover
            return
        if self._lock:
            return
        self._writable()
        fd = os.open(self.root / RUN_LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise _in_use(self.root, run_holder(self.root)) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._lock.append(fd)
        weakref.finalize(self, _release, self._lock)

    def close(self) -> None:
        """Flush, fsync and close the open JSONL files (a later append reopens them) and release the run folder."""
        _release(self._lock)
        for f in self._files.values():
            with suppress(OSError, ValueError):
                f.flush()
                os.fsync(f.fileno())
        _close_files(self._files)
        _OPEN.discard(self)

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def write_config(self, config: "RunConfig", *, new: bool = False) -> None:
        """Write ``config.json``.

        Args:
            config: the run config.
            new: claim the folder for a new run (two runs never share a folder).

        Raises:
            InputError: ``new`` and the folder already holds a run.
        """
        self._writable()
        p = self.root / "config.json"
        if config.base_url and redact_url(config.base_url) != config.base_url:
            config = config.model_copy(update={"base_url": redact_url(config.base_url)})  # no key in the file
        if not new:  # whole or not at all: a run killed mid-write (or a full disk) keeps the previous config.json
            atomic_write_text(p, config.model_dump_json(indent=2), root=self.root)
            return
        remember(config)  # this machine starts the run: its base URL, sandbox and tools are the user's own choice
        remember_run(config)  # ... and its own `yes` holds when it is resumed here
        try:
            with p.open("x", encoding="utf-8") as f:
                f.write(config.model_dump_json(indent=2))
        except FileExistsError:
            # the id finds the run only in runs/ (resume's default --out); elsewhere the folder does
            default = self.root.name == config.run_id and self.root.parent.resolve() == Path("runs").resolve()
            ref = self.root.name if default else str(self.root)
            raise InputError(
                "this run folder already holds a run",
                what=str(self.root),
                fix=f"resume it with `sgieval resume {ref}`, or start the new run with another run id",
            ) from None

    def rubric_path(self, name: str) -> Path:
        """Where the run keeps the rubric ``name``: ``rubrics/<slug>.yaml``.

        Args:
            name: the rubric name.

        Returns:
            The path.

        Raises:
            InputError: a name with no letter or digit.
        """
        return self.root / "rubrics" / f"{slug_name(name, 'rubric name')}.yaml"

    def read_config(self) -> "RunConfig":
        """The run's ``config.json`` as a RunConfig.

        Returns:
            The config.

        Raises:
            InputError: the folder has no ``config.json``.
            ValidationError: the file is not a valid config.
        """
        p = self.root / "config.json"
        if not os.path.lexists(p):
            raise InputError("no config.json", what=str(self.root), fix="give the id of a run listed by `sgieval runs`")
        return RunConfig.model_validate_json(read_text_in(self.root, p))


def _validate_escaped(cls: type[BaseModel], line: str) -> Any:
    """``line`` as a ``cls`` record via Python's JSON parser (reading lone surrogates pydantic refuses), or None."""
    if "\\ud" not in line.lower():
        return None
    try:
        return cls.model_validate(json.loads(line))
    except (ValueError, RecursionError):
        return None
