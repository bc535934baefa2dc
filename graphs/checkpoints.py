"""Checkpoints of a run (``state.sqlite``) read as data, never as code: every saver uses :class:`StrictSerializer`,
which checks each stored constructor reference against :data:`ALLOWED_TYPES` before decoding (GHSA-g48c-2wqr-h844) and
refuses anything else with a TamperedFileError naming the file.  Pickle is never read."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ..core import TamperedFileError, read_sqlite

# the (module, name) types sgieval's graphs write into a checkpoint: the confirmation interrupt and its resume command,
# checkpoint metadata timestamps, the metric-definition chat's messages
ALLOWED_TYPES: frozenset[tuple[str, str]] = frozenset(
    {("langgraph.types", "Interrupt"), ("langgraph.types", "Command"), ("datetime", "datetime"),
     ("datetime", "timezone"), ("datetime", "timedelta"), ("uuid", "UUID"),
     ("langchain_core.messages.human", "HumanMessage"), ("langchain_core.messages.ai", "AIMessage"),
     ("langchain_core.messages.system", "SystemMessage"), ("langchain_core.messages.tool", "ToolMessage")}
)  # fmt: skip
ALLOWED_METHODS: frozenset[tuple[str, str, str]] = frozenset({("datetime", "datetime", "fromisoformat")})

# msgpack extension codes of langgraph.checkpoint.serde.jsonplus (its documented wire format)
_EXT_CONSTRUCTORS = (0, 1, 2)  # single argument, positional arguments, keyword arguments
_EXT_METHOD = 3
_EXT_PYDANTIC = (4, 5)
_EXT_DELTA = 7


class StrictSerializer(SerializerProtocol):
    """A checkpoint serializer that writes as LangGraph's ``JsonPlusSerializer`` and reads only allowlisted types:
    anything else (or pickle) raises TamperedFileError naming ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._inner = JsonPlusSerializer(allowed_msgpack_modules=sorted(ALLOWED_TYPES), allowed_json_modules=None)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self._inner.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, raw = data
        refused: list[str] = []
        if kind == "msgpack":
            try:
                ormsgpack.unpackb(raw, ext_hook=_ext_checker(refused), option=ormsgpack.OPT_NON_STR_KEYS)
            except ValueError:  # ormsgpack reports an ext hook's refusal (or a malformed value) as ValueError
                if not refused:
                    raise
        elif kind == "json":
            json.loads(raw, object_hook=_json_checker(refused))
        elif kind not in ("null", "bytes", "bytearray"):
            refused.append(f"a value stored as {kind!r}")
        if refused:
            raise TamperedFileError(
                f"{self.path.name} holds {refused[0]}, which sgieval never writes; the folder may have been "
                "tampered with",
                what=str(self.path),
                fix="open only run folders you trust, or move state.sqlite away: `sgieval report` then rebuilds "
                "the report from the JSONL records, and `sgieval resume` plans the run again keeping every record",
            )
        return self._inner.loads_typed(data)


class _Refused(Exception):
    """Stops the msgpack walk at the first value that is not allowlisted."""


def _ext_checker(refused: list[str]):
    """An ormsgpack ``ext_hook`` appending to ``refused`` the first (nested) extension value not allowlisted."""

    def check(code: int, data: bytes) -> None:
        inner = ormsgpack.unpackb(data, ext_hook=check, option=ormsgpack.OPT_NON_STR_KEYS)
        if code == _EXT_DELTA:
            return
        seq = inner if isinstance(inner, (list, tuple)) else ()
        ref = (seq[0], seq[1]) if len(seq) >= 2 else None
        if code in _EXT_CONSTRUCTORS or code in _EXT_PYDANTIC:
            if ref not in ALLOWED_TYPES:
                refused.append(f"a value of type {_name(ref)}")
        elif code == _EXT_METHOD:
            method = seq[3] if len(seq) >= 4 else None
            if ref is None or (ref[0], ref[1], method) not in ALLOWED_METHODS:
                refused.append(f"a call of {_name(ref)}.{method}")
        else:
            refused.append(f"a value of msgpack extension type {code}")
        if refused:
            raise _Refused(refused[0])

    return check


def _json_checker(refused: list[str]):
    """A ``json.loads`` object hook appending to ``refused`` each LangChain-serialized object not allowlisted."""

    def check(obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("lc") is not None and obj.get("type") in ("constructor", "not_implemented", "secret"):
            ident = obj.get("id")
            ref = (".".join(map(str, ident[:-1])), ident[-1]) if isinstance(ident, list) and ident else None
            if ref not in ALLOWED_TYPES:
                refused.append(f"a serialized object {_name(ref)}")
        return obj

    return check


def _name(ref: Any) -> str:
    return ".".join(str(p) for p in ref) if isinstance(ref, tuple) else repr(ref)


@asynccontextmanager
async def open_saver(path: str | Path) -> AsyncIterator[AsyncSqliteSaver]:
    """The async SQLite checkpointer of ``path`` (a run's ``state.sqlite``), reading with :class:`StrictSerializer`.

    Args:
        path: the checkpoint file (created when missing).

    Returns:
        An async context manager yielding the saver.

    Raises:
        TamperedFileError: when a checkpoint read through the saver holds a value sgieval never writes.
    """
    async with aiosqlite.connect(str(path)) as conn:
        yield AsyncSqliteSaver(conn, serde=StrictSerializer(path))


def read_state(path: str | Path, thread_id: str) -> dict[str, Any]:
    """The graph state (channel values) of thread ``thread_id``'s last checkpoint in ``path``, read-only.

    Args:
        path: a run's ``state.sqlite``; a missing file gives ``{}``.
        thread_id: the run id.

    Returns:
        The state dict (``{}`` when the file, the thread or its checkpoint is absent or not SQLite).

    Raises:
        TamperedFileError: when the checkpoint holds a value sgieval never writes.
        InputError: when the file cannot be read (permission denied), naming it.
    """
    db = Path(path)
    if not db.is_file():
        return {}
    try:
        with read_sqlite(db) as conn:  # nothing made or changed beside the file (no -wal, no -shm)
            tup = SqliteSaver(conn, serde=StrictSerializer(db)).get_tuple({"configurable": {"thread_id": thread_id}})
    except sqlite3.Error:
        return {}
    return dict(tup.checkpoint.get("channel_values") or {}) if tup else {}
