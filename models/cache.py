"""Content-addressed cache of model calls: a reply is stored under ``sha256(canonical JSON of {"model",
"params", "messages"})`` in ``$SGIEVAL_CACHE_DIR/calls.sqlite`` (else ``platformdirs.user_cache_dir("sgieval")``),
so re-rendering a report or adding a metric calls no model again.  On by default for temperature-0 calls; the
switch and the file belong to the current call context.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Sequence

import platformdirs
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from ..core import CacheCorruptError, current_settings, lone_surrogate
from .base import NamedModel
from .context import current_call_context


def cache_dir() -> Path:
    """``$SGIEVAL_CACHE_DIR`` or the platform's user cache dir for sgieval."""
    return current_settings().cache_dir or Path(platformdirs.user_cache_dir("sgieval"))


def configure(*, enabled: bool | None = None, path: str | Path | None = None) -> None:
    """Switch the cache on/off and/or point it at another SQLite file in the current call context."""
    current_call_context().configure_cache(enabled=enabled, path=path)


def enabled() -> bool:
    """Whether the cache is on in the current call context (default True unless ``SGIEVAL_NO_CACHE`` is set)."""
    return current_call_context().cache_enabled()


def get_cache() -> "CallCache":
    """The current call context's cache (opened lazily at its configured path).

    Returns:
        The cache.
    """
    return current_call_context().cache(CallCache, lambda: cache_dir() / "calls.sqlite")


def temperature_of(model: NamedModel) -> float | None:
    """``model.params["temperature"]``, else the chat model's (or bound model's) ``temperature``, else None."""
    if "temperature" in model.params:
        t = model.params["temperature"]
        return None if t is None else float(t)
    for obj in (model.chat, getattr(model.chat, "bound", None)):
        t = getattr(obj, "temperature", None)
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            return float(t)
    return None


def should_cache(model: NamedModel, use_cache: bool | None = None) -> bool:
    """Whether the call is cached: ``use_cache`` when given, else cache on and temperature 0.

    Args:
        model: the model.
        use_cache: the caller's choice.

    Returns:
        The answer.
    """
    if use_cache is not None:
        return bool(use_cache)
    return enabled() and temperature_of(model) == 0.0


_DROP = object()


def _plain(v: Any) -> Any:
    """JSON-safe copy keeping only plain data (other values are dropped)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        items = ((str(k), _plain(x)) for k, x in v.items())
        return {k: x for k, x in items if x is not _DROP}
    if isinstance(v, (list, tuple)):
        return [x for x in (_plain(y) for y in v) if x is not _DROP]
    with contextlib.suppress(Exception):  # no model_dump, or one that fails: dropped
        return _plain(v.model_dump())
    return _DROP


def model_params(model: NamedModel) -> dict[str, Any]:
    """Parameters that change a reply (``model.params`` win; a repeated judge draw adds ``"repeat"``), memoised on
    the NamedModel: do not mutate the result."""
    memo = model.__dict__.get("_sgieval_key_params")
    if memo is not None and memo[0] is model.chat and memo[1] == model.params and memo[2] == model.dropped:
        return memo[3]
    out: dict[str, Any] = {}
    chat = model.chat
    for obj in (getattr(chat, "bound", None), chat):  # getattr of None: no parameter
        with contextlib.suppress(Exception):  # a property that fails: not part of the key
            ident = getattr(obj, "_identifying_params", None)
            if isinstance(ident, dict):
                out.update(ident)
        for attr in ("openai_api_base", "base_url"):
            v = getattr(obj, attr, None)
            if isinstance(v, str):
                out["base_url"] = v
    kwargs = getattr(chat, "kwargs", None)
    if isinstance(kwargs, dict):
        out["bound"] = kwargs
    out.update(model.params)
    if model.repeat:
        out["repeat"] = int(model.repeat)
    plain = _plain(out)
    model.__dict__["_sgieval_key_params"] = (model.chat, dict(model.params), dict(model.dropped), plain)
    return plain


def _message_payload(messages: Sequence[BaseMessage] | str) -> Any:
    if isinstance(messages, str):
        return messages
    out = []
    for m in messages:
        if isinstance(m, BaseMessage):
            d = message_to_dict(m)  # random per-message ids must not change the key, nor metadata
            data = {k: v for k, v in d["data"].items() if k not in ("id", "response_metadata", "usage_metadata")}
            out.append({"type": d["type"], "data": _plain(data)})
        else:
            out.append(_plain(m))
    return out


def cache_key(model_name: str, params: dict[str, Any], messages: Sequence[BaseMessage] | str) -> str:
    """sha256 hex of the canonical JSON of {"model", "params", "messages"} (message ids and metadata excluded)."""
    return _key(model_name, _plain(params), messages)


def _key(model_name: str, plain_params: Any, messages: Sequence[BaseMessage] | str) -> str:
    payload = {"model": model_name, "params": plain_params, "messages": _message_payload(messages)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_key_for(model: NamedModel, messages: Sequence[BaseMessage] | str) -> str:
    """:func:`cache_key` of ``model.name``, :func:`model_params` and ``messages``.

    Args:
        model: the model.
        messages: the messages, or a string.

    Returns:
        The key (hex digest).
    """
    return _key(model.name, model_params(model), messages)  # model_params is plain data already


_OPEN: "weakref.WeakSet[CallCache]" = weakref.WeakSet()


@atexit.register
def _commit_all() -> None:
    """At exit, commit what every open cache still holds in memory."""
    for c in list(_OPEN):
        c.close()


class CallCache:
    """SQLite store ``key -> serialised reply``, safe across threads and processes (WAL); a writer thread commits
    replies every :attr:`BATCH` replies or :attr:`WINDOW_S` seconds."""

    BATCH = 64
    """Pending replies that trigger a commit at once."""
    WINDOW_S = 0.2
    """Longest time (s) a reply stays uncommitted: what a SIGKILL can lose."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # the read connection
        try:
            self._db: sqlite3.Connection | None = self._connect()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, reply TEXT NOT NULL, created REAL)"
            )
        except sqlite3.DatabaseError as e:
            raise self.corrupt(e) from None
        self._pending: dict[str, tuple[str, str, float]] = {}  # key -> (model, reply JSON, created)
        self._cond = threading.Condition()  # guards _pending, _writing, _closed
        self._writing: dict[str, tuple[str, str, float]] = {}  # the batch being committed
        self._closed = False
        self._writer: threading.Thread | None = None
        self._wdb: sqlite3.Connection | None = None  # the committing connection (one batch at a time)
        self.error: str | None = None  # the last failed commit (its replies were dropped)
        _OPEN.add(self)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def corrupt(self, e: Exception) -> CacheCorruptError:
        """The one-line error for a cache file SQLite cannot read."""
        return CacheCorruptError(
            f"the call cache is corrupted ({e})",
            what=str(self.path),
            fix=f"delete {self.path} (it only holds cached replies; nothing else is lost) or run with --no-cache",
        )

    def _read(self, sql: str, args: tuple = ()) -> Any:
        """First row of ``sql`` on the read connection (CacheCorruptError for an unreadable file)."""
        try:
            with self._lock:
                if self._db is None:
                    self._db = self._connect()
                return self._db.execute(sql, args).fetchone()
        except sqlite3.DatabaseError as e:
            raise self.corrupt(e) from None

    def get(self, key: str) -> BaseMessage | None:
        """The stored reply for ``key`` (a fresh message) or None (also for an entry that does not decode)."""
        with self._cond:
            row = self._pending.get(key) or self._writing.get(key)
        if row is None:
            row = self._read("SELECT model, reply FROM calls WHERE key = ?", (key,))
            if row is None:
                return None
        try:
            return messages_from_dict([json.loads(row[1])])[0]
        except (ValueError, TypeError, KeyError, RecursionError):  # one damaged entry: a miss
            return None

    def put(self, key: str, reply: BaseMessage, *, model: str = "") -> None:
        """Store ``reply`` under ``key``; committed within :attr:`WINDOW_S` seconds."""
        d = message_to_dict(reply)
        meta = d["data"].get("response_metadata")
        if isinstance(meta, dict) and "sgieval" in meta:
            d["data"]["response_metadata"] = {k: v for k, v in meta.items() if k != "sgieval"}
        blob = json.dumps(d, ensure_ascii=False, default=str)
        if lone_surrogate(blob) is not None:  # a reply holding "\\ud800": kept as the JSON escape (SQLite needs UTF-8)
            blob = json.dumps(d, default=str)
        with self._cond:
            self._pending[key] = (model, blob, time.time())
            if self._closed:  # closed (e.g. at exit): write through
                self._commit_pending()
                return
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="sgieval-call-cache", daemon=True)
                self._writer.start()
            if len(self._pending) >= self.BATCH:
                self._cond.notify_all()

    def _write_loop(self) -> None:
        """Writer thread: commit the pending replies per batch until closed."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if self._closed:
                    return  # close() commits what is left
                self._cond.wait_for(lambda: len(self._pending) >= self.BATCH or self._closed, self.WINDOW_S)
                self._commit_pending()

    def _commit_pending(self) -> None:
        """Commit ``_pending`` in one transaction (``_cond`` held, released while SQLite writes)."""
        self._cond.wait_for(lambda: not self._writing)  # another thread's batch first
        if not self._pending:
            return
        batch, self._pending = self._pending, {}
        self._writing = batch
        self._cond.release()
        try:
            if self._wdb is None:
                self._wdb = self._connect()
            rows = [(k, m, blob, t) for k, (m, blob, t) in batch.items()]
            with self._wdb:  # one transaction
                self._wdb.execute("BEGIN IMMEDIATE")
                self._wdb.executemany(
                    "INSERT OR REPLACE INTO calls (key, model, reply, created) VALUES (?, ?, ?, ?)", rows
                )
        except sqlite3.Error as e:
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self._cond.acquire()
            self._writing = {}
            self._cond.notify_all()

    def flush(self) -> None:
        """Commit every pending reply now (returns when they are on disk)."""
        with self._cond:
            self._commit_pending()

    def __len__(self) -> int:
        self.flush()
        return int(self._read("SELECT COUNT(*) FROM calls")[0])

    def clear(self) -> None:
        """Delete every entry."""
        self.flush()
        self._read("DELETE FROM calls")

    def close(self) -> None:
        """Commit the pending replies, stop the writer thread and close the connections."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        writer = self._writer
        if writer is not None and writer is not threading.current_thread():
            writer.join()
        self.flush()
        with self._cond:
            wdb, self._wdb = self._wdb, None
        with self._lock:
            rdb, self._db = self._db, None
            for db in (rdb, wdb):
                if db is not None:
                    with contextlib.suppress(sqlite3.Error):
                        db.close()
        _OPEN.discard(self)
