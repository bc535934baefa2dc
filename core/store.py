"""The run store: run folder I/O (``runs/<run_id>/``), append-only JSONL records."""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import Any, BinaryIO, Sequence

from pydantic import BaseModel

from .errors import InputError
from .records import Item, Response, Score, RunConfig

# ------------------------------------------------------------------ run folder
BUDGET_STOP_NOTE = "The run stopped at its budget"
"""How a report says its run stopped at the budget (``sgieval runs`` and ``resume`` look for it)."""


_OPEN: "weakref.WeakSet[RunStore]" = weakref.WeakSet()
"""Run stores holding open JSONL files (for :func:`sync_open_stores`); an
OS-resource registry, not run configuration."""


def sync_open_stores() -> None:
    """Flush, fsync and close the JSONL files of every RunStore of this process
    (the command line calls it before ending the process without teardown)."""
    for store in list(_OPEN):
        store.close()


def _close_files(files: dict[str, BinaryIO]) -> None:
    for f in files.values():
        try:
            f.close()
        except OSError:
            pass
    files.clear()


class RunStore:
    """The run folder ``<out_dir>/<run_id>/``: append-only JSONL records.

    ``items.jsonl``, ``responses.jsonl``, ``scores.jsonl``: one record per
    line, appended and flushed as produced, so a killed run loses nothing
    written.  A torn last line (killed mid-write) is dropped on read and
    truncated before the next append.  ``config.json`` holds the RunConfig.
    Keys: a Response is done per (item_id, model); a Score per
    (item_id, model, metric).

    Per-item cost (issue 13 item 3): a file is opened once, on its first
    append, and stays open (append + flush per call, so a SIGKILL loses
    nothing appended) until :meth:`close`, which also fsyncs it.  The records
    of a file, once read, are kept with the file's size: :meth:`read` returns
    them without re-reading the file while the file has the size this store
    last saw (its own appends extend them), and re-reads it when another
    writer changed it.
    """

    FILES: dict[str, type[BaseModel]] = {"items": Item, "responses": Response, "scores": Score}
    JOURNALS = ("ledger",)
    """Plain-dict JSONL files (:meth:`append_rows` / :meth:`read_rows`):
    ``ledger.jsonl`` holds one model call per line (tokens, latency, cost)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "figures").mkdir(exist_ok=True)
        for name in (*self.FILES, *self.JOURNALS):
            self._repair(self.path(name))
        self._files: dict[str, BinaryIO] = {}
        self._records: dict[str, tuple[int, list[Any]]] = {}  # name -> (file size seen, its records)
        self._finalizer = weakref.finalize(self, _close_files, self._files)

    def path(self, name: str) -> Path:
        return self.root / f"{name}.jsonl"

    @staticmethod
    def _repair(p: Path) -> None:
        if not p.exists() or p.stat().st_size == 0:
            return
        with p.open("rb+") as f:
            f.seek(-1, 2)
            if f.read(1) == b"\n":
                return
            data = p.read_bytes()
            cut = data.rfind(b"\n") + 1
            f.truncate(cut)

    def _write(self, name: str, data: bytes) -> int:
        """Append ``data`` to ``name``.jsonl through its open file and flush;
        returns the file's size after the write."""
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = self.path(name).open("ab")
            _OPEN.add(self)
        f.write(data)
        f.flush()
        return f.tell()

    def append(self, name: str, records: Sequence[BaseModel]) -> None:
        """Append records as JSON lines and flush."""
        if not records:
            return
        data = "".join(r.model_dump_json() + "\n" for r in records).encode("utf-8")
        end = self._write(name, data)
        known = self._records.get(name)
        if known is not None:
            if known[0] + len(data) == end:  # nobody else wrote in between: the kept records stay exact
                self._records[name] = (end, known[1] + list(records))
            else:
                del self._records[name]

    def append_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Append JSON-ready dicts to the journal ``name`` (one of :attr:`JOURNALS`) and flush."""
        if not rows:
            return
        self._write(name, "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"))

    def read_rows(self, name: str) -> list[dict[str, Any]]:
        """Every dict of the journal ``name`` (torn or unreadable lines dropped)."""
        p = self.path(name)
        if not p.exists():
            return []
        out = []
        for line in p.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                out.append(row)
        return out

    def read(self, name: str) -> list[Any]:
        """All records of ``name`` (torn last line dropped), as a new list
        (the records themselves are shared with later reads: do not mutate them)."""
        p = self.path(name)
        try:
            size = p.stat().st_size
        except FileNotFoundError:
            size = 0
        known = self._records.get(name)
        if known is not None and known[0] == size:
            return list(known[1])
        data = p.read_bytes() if size else b""
        cls = self.FILES[name]
        out = []
        for line in data.decode("utf-8").splitlines():
            if line.strip():
                try:
                    out.append(cls.model_validate_json(line))
                except ValueError:
                    continue
        self._records[name] = (len(data), out)
        return list(out)

    def close(self) -> None:
        """Flush, fsync and close the open JSONL files (a later append reopens them)."""
        for f in self._files.values():
            try:
                f.flush()
                os.fsync(f.fileno())
            except (OSError, ValueError):
                pass
        _close_files(self._files)
        _OPEN.discard(self)

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def write_config(self, config: "RunConfig", *, new: bool = False) -> None:
        """Write ``config.json``.  ``new=True`` claims the folder for a new run:
        raises InputError when it already holds a run's config (two runs never
        share a folder)."""
        p = self.root / "config.json"
        from .secrets import redact_url

        if config.base_url and redact_url(config.base_url) != config.base_url:
            config = config.model_copy(update={"base_url": redact_url(config.base_url)})  # no key in the file
        if not new:  # replace atomically: a run killed mid-write keeps the previous config.json whole
            tmp = p.with_name(f".config.json.{os.getpid()}.tmp")
            tmp.write_text(config.model_dump_json(indent=2), encoding="utf-8")
            os.replace(tmp, p)
            return
        try:
            with p.open("x", encoding="utf-8") as f:
                f.write(config.model_dump_json(indent=2))
        except FileExistsError:
            raise InputError("this run folder already holds a run", what=str(self.root),
                             fix=f"resume it with `sgieval resume {self.root.name}`, or start the new run "
                                 "with another run id") from None

    def read_config(self) -> "RunConfig":
        p = self.root / "config.json"
        if not p.exists():
            raise InputError("no config.json", what=str(self.root), fix="give the id of a run listed by `sgieval runs`")
        return RunConfig.model_validate_json(p.read_text(encoding="utf-8"))
