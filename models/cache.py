"""Content-addressed cache of model calls (issue 6 part 2).

A reply is stored under ``sha256(canonical JSON of {"model", "params",
"messages"})`` in a SQLite file, so re-rendering a report or adding a metric
does not call the models again.  Where:

* ``$SGIEVAL_CACHE_DIR/calls.sqlite`` when ``SGIEVAL_CACHE_DIR`` is set,
* else ``platformdirs.user_cache_dir("sgieval")/calls.sqlite``.

When: :func:`should_cache` -- on by default only for deterministic calls
(temperature 0, read from ``NamedModel.params["temperature"]`` or the chat
model's ``temperature`` attribute).  ``--no-cache`` calls
``configure(enabled=False)``; the environment variable ``SGIEVAL_NO_CACHE=1``
does the same for subprocesses.

Replies are serialised with ``langchain_core.messages.message_to_dict`` and
restored with ``messages_from_dict`` (content, tool calls, usage metadata and
response metadata survive the round trip).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from .base import NamedModel

_state: dict[str, Any] = {"enabled": None, "path": None, "cache": None}
_lock = threading.Lock()


def cache_dir() -> Path:
    """``$SGIEVAL_CACHE_DIR`` or the platform's user cache dir for sgieval."""
    env = os.environ.get("SGIEVAL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("sgieval"))


def configure(*, enabled: bool | None = None, path: str | Path | None = None) -> None:
    """Switch the cache on/off for this process (``enabled``; None leaves it)
    and/or point it at another SQLite file (``path``)."""
    with _lock:
        if enabled is not None:
            _state["enabled"] = bool(enabled)
        if path is not None:
            _state["path"] = Path(path)
            if _state["cache"] is not None:
                _state["cache"].close()
            _state["cache"] = None


def enabled() -> bool:
    """Whether the cache is on (default True unless ``SGIEVAL_NO_CACHE`` is set)."""
    if _state["enabled"] is not None:
        return bool(_state["enabled"])
    return os.environ.get("SGIEVAL_NO_CACHE", "").strip().lower() not in ("1", "true", "yes")


def get_cache() -> "CallCache":
    """The process-wide cache (opened lazily at the configured path)."""
    with _lock:
        path = _state["path"] or cache_dir() / "calls.sqlite"
        c = _state["cache"]
        if c is None or c.path != Path(path):
            if c is not None:
                c.close()
            c = _state["cache"] = CallCache(path)
        return c


# --------------------------------------------------------------------- keys
def temperature_of(model: NamedModel) -> float | None:
    """``model.params["temperature"]``, else the chat model's (or its bound
    model's) ``temperature`` attribute, else None (provider default)."""
    if "temperature" in model.params:
        t = model.params["temperature"]
        return None if t is None else float(t)
    chat = model.chat
    for obj in (chat, getattr(chat, "bound", None)):
        t = getattr(obj, "temperature", None)
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            return float(t)
    return None


def should_cache(model: NamedModel, use_cache: bool | None = None) -> bool:
    """``use_cache`` True/False wins; None -> cache on and temperature == 0."""
    if use_cache is not None:
        return bool(use_cache)
    return enabled() and temperature_of(model) == 0.0


_DROP = object()


def _plain(v: Any) -> Any:
    """JSON-safe copy keeping only plain data (values that are not plain data,
    e.g. clients whose repr holds a memory address, are dropped)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        items = ((str(k), _plain(x)) for k, x in v.items())
        return {k: x for k, x in items if x is not _DROP}
    if isinstance(v, (list, tuple)):
        return [x for x in (_plain(y) for y in v) if x is not _DROP]
    if hasattr(v, "model_dump"):
        try:
            return _plain(v.model_dump())
        except Exception:  # noqa: BLE001
            return _DROP
    return _DROP


def model_params(model: NamedModel) -> dict[str, Any]:
    """Parameters that change a reply: the chat model's identifying params
    (model, temperature, max tokens...), its base URL, bound kwargs (tools),
    and ``model.params`` (which win)."""
    out: dict[str, Any] = {}
    chat = model.chat
    for obj in (getattr(chat, "bound", None), chat):
        if obj is None:
            continue
        try:
            ident = getattr(obj, "_identifying_params", None)
            if isinstance(ident, dict):
                out.update(ident)
        except Exception:  # noqa: BLE001
            pass
        for attr in ("openai_api_base", "base_url"):
            v = getattr(obj, attr, None)
            if isinstance(v, str):
                out["base_url"] = v
    kwargs = getattr(chat, "kwargs", None)
    if isinstance(kwargs, dict):
        out["bound"] = kwargs
    out.update(model.params)
    plain = _plain(out)
    return plain if isinstance(plain, dict) else {}


def _message_payload(messages: Sequence[BaseMessage] | str) -> Any:
    if isinstance(messages, str):
        return messages
    out = []
    for m in messages:
        if isinstance(m, BaseMessage):
            d = message_to_dict(m)
            data = dict(d["data"])
            data.pop("id", None)  # random per-message ids must not change the key
            data.pop("response_metadata", None)
            data.pop("usage_metadata", None)
            out.append({"type": d["type"], "data": _plain(data)})
        else:
            out.append(_plain(m))
    return out


def cache_key(model_name: str, params: dict[str, Any], messages: Sequence[BaseMessage] | str) -> str:
    """sha256 hex of the canonical JSON of {"model", "params", "messages"}
    (keys sorted; message ids and response/usage metadata excluded)."""
    payload = {"model": model_name, "params": _plain(params), "messages": _message_payload(messages)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_key_for(model: NamedModel, messages: Sequence[BaseMessage] | str) -> str:
    """:func:`cache_key` of ``model.name``, :func:`model_params` and ``messages``."""
    return cache_key(model.name, model_params(model), messages)


# -------------------------------------------------------------------- store
class CallCache:
    """SQLite store ``key -> serialised reply``; safe across threads (one
    connection behind a lock) and processes (WAL, 30 s busy timeout)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, reply TEXT NOT NULL, created REAL)"
        )

    def get(self, key: str) -> BaseMessage | None:
        """The stored reply for ``key`` (a fresh message object) or None."""
        with self._lock:
            row = self._db.execute("SELECT reply FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return messages_from_dict([json.loads(row[0])])[0]

    def put(self, key: str, reply: BaseMessage, *, model: str = "") -> None:
        """Store ``reply`` under ``key`` (replaces an existing entry)."""
        d = message_to_dict(reply)
        meta = d["data"].get("response_metadata")
        if isinstance(meta, dict) and "sgieval" in meta:
            d["data"]["response_metadata"] = {k: v for k, v in meta.items() if k != "sgieval"}
        blob = json.dumps(d, ensure_ascii=False, default=str)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls (key, model, reply, created) VALUES (?, ?, ?, ?)",
                             (key, model, blob, time.time()))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def clear(self) -> None:
        """Delete every entry."""
        with self._lock:
            self._db.execute("DELETE FROM calls")

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
