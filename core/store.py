"""The run store: run folder I/O (``runs/<run_id>/``), append-only JSONL records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import InputError, SgievalError
from .records import Item, Response, Score, RunConfig

# ------------------------------------------------------------------ run folder
BUDGET_STOP_NOTE = "The run stopped at its budget"
"""How a report says its run stopped at the budget (``sgieval runs`` and ``resume`` look for it)."""


class RunStore:
    """The run folder ``<out_dir>/<run_id>/``: append-only JSONL records.

    ``items.jsonl``, ``responses.jsonl``, ``scores.jsonl``: one record per
    line, appended and flushed as produced, so a killed run loses nothing
    written.  A torn last line (killed mid-write) is dropped on read and
    truncated before the next append.  ``config.json`` holds the RunConfig.
    Keys: a Response is done per (item_id, model); a Score per
    (item_id, model, metric).
    """

    FILES = {"items": Item, "responses": Response, "scores": Score}
    JOURNALS = ("ledger",)
    """Plain-dict JSONL files (:meth:`append_rows` / :meth:`read_rows`):
    ``ledger.jsonl`` holds one model call per line (tokens, latency, cost)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "figures").mkdir(exist_ok=True)
        for name in (*self.FILES, *self.JOURNALS):
            self._repair(self.path(name))

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

    def append(self, name: str, records: list[BaseModel]) -> None:
        """Append records as JSON lines and flush."""
        if not records:
            return
        with self.path(name).open("a", encoding="utf-8") as f:
            for r in records:
                f.write(r.model_dump_json() + "\n")
            f.flush()

    def append_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Append JSON-ready dicts to the journal ``name`` (one of :attr:`JOURNALS`) and flush."""
        if not rows:
            return
        with self.path(name).open("a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
            f.flush()

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
        """All records of ``name`` (torn last line dropped)."""
        p = self.path(name)
        if not p.exists():
            return []
        cls = self.FILES[name]
        out = []
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    out.append(cls.model_validate_json(line))
                except ValueError:
                    continue
        return out

    def write_config(self, config: "RunConfig", *, new: bool = False) -> None:
        """Write ``config.json``.  ``new=True`` claims the folder for a new run:
        raises InputError when it already holds a run's config (two runs never
        share a folder)."""
        p = self.root / "config.json"
        if not new:
            p.write_text(config.model_dump_json(indent=2), encoding="utf-8")
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
