"""The run-scoped settings of model calls: cache switch and file, concurrency limits.

A :class:`CallContext` holds what a run configures for its model calls and
the resources that follow from it (its semaphores, its open cache file).
:func:`sgieval.models.calls.ainvoke` reads the *current* context: the one a
run activated with ``with call_context(ctx): ...`` (a contextvar, so it is
inherited by the asyncio tasks the run starts and invisible to every other
run in the process), else the process's default context (calls made outside
any run, e.g. from a notebook cell or a test).

Two runs in one process (``asyncio.gather(sgieval.aevaluate(...), ...)``)
therefore each see their own cache switch and limits, and a finished run
leaves nothing behind: the default context is never changed by a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..core import current_settings

DEFAULT_MAX_CONCURRENCY = 16

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "CallContext",
    "call_context",
    "current_call_context",
    "prompt_scope",
    "current_prompt_scope",
]


@dataclass(eq=False)
class CallContext:
    """What one run configures for its model calls.

    ``use_cache``: True/False switches the call cache on/off for the run; None
    follows ``SGIEVAL_NO_CACHE`` (read when asked).  ``cache_path``: the cache's
    SQLite file (None: ``<SGIEVAL_CACHE_DIR or user cache dir>/calls.sqlite``).
    ``limits``: in-flight calls per provider key, ``"*"`` for any provider not
    listed (>= 1 each).  ``timeout_s``: seconds per attempt of a model call
    (None: :func:`sgieval.models.calls.ainvoke`'s default, 300 s); all the
    attempts of one call get at most twice this.  The context owns one ``asyncio.Semaphore`` per
    (event loop, provider) and its opened cache; :meth:`close` releases them.
    """

    use_cache: bool | None = None
    cache_path: Path | None = None
    limits: dict[str, int] = field(default_factory=lambda: {"*": DEFAULT_MAX_CONCURRENCY})
    timeout_s: float | None = None
    secrets: Any = None
    """The run's :class:`~sgieval.core.SecretValues`: a reply holding one is masked before the call cache
    keeps it (None: nothing masked by value)."""
    batches: Any = None
    """The run's :class:`~sgieval.models.batch.BatchCollector` (``--batch``; None: made on first use by a batch
    chat model, without a run folder to resume from)."""
    _semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]]" = field(
        default_factory=weakref.WeakKeyDictionary, repr=False
    )
    _cache: Any = field(default=None, repr=False)
    _resolved: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ------------------------------------------------------------ concurrency
    def set_limit(self, provider: str, n: int) -> None:
        """Bound in-flight calls to ``n`` (>= 1) for ``provider``, or for every
        provider when ``provider`` is ``"*"``/``"all"`` (also dropping
        per-provider overrides).  Applies to calls that start afterwards.
        Raises ValueError for ``n < 1``.

        Args:
            provider: a provider name, or ``"*"``/``"all"``.
            n: most calls in flight (>= 1).
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"max concurrency must be >= 1, got {n}")
        with self._lock:
            if provider in ("*", "all"):
                self.limits = {"*": n}
                for sems in list(self._semaphores.values()):
                    sems.clear()
            else:
                self.limits = {**self.limits, provider: n}
                for sems in list(self._semaphores.values()):
                    sems.pop(provider, None)

    def limit(self, provider: str, default: int | None = None) -> int:
        """The in-flight limit for ``provider``: the one set for it (:meth:`set_limit`), else ``default`` (a
        model's own limit, e.g. 1 for the embedded model) when given, else the limit for every provider.

        Args:
            provider: a provider name.
            default: the model's own limit, if it has one.

        Returns:
            The limit (>= 1).
        """
        if provider in self.limits:
            return self.limits[provider]
        return default if default is not None else self.limits.get("*", DEFAULT_MAX_CONCURRENCY)

    def semaphore(self, provider: str, default: int | None = None) -> asyncio.Semaphore:
        """This context's semaphore for ``provider`` on the running event loop (limit: :meth:`limit` with
        ``default``, fixed when the semaphore is first made).

        Args:
            provider: a provider name.
            default: the model's own limit, if it has one.

        Returns:
            The semaphore.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            sems = self._semaphores.get(loop)
            if sems is None:
                sems = self._semaphores[loop] = {}
            sem = sems.get(provider)
            if sem is None:
                sem = sems[provider] = asyncio.Semaphore(self.limit(provider, default))
            return sem

    # ------------------------------------------------------------------ cache
    def cache_enabled(self) -> bool:
        """Whether the call cache is on: ``use_cache`` when set, else not ``SGIEVAL_NO_CACHE``.

        Returns:
            True when the cache is on.
        """
        if self.use_cache is not None:
            return bool(self.use_cache)
        return not current_settings().no_cache

    def configure_cache(self, *, enabled: bool | None = None, path: str | Path | None = None) -> None:
        """Switch this context's cache on/off (``enabled``; None leaves it) and/or
        point it at another SQLite file (``path``; the open one is closed).

        Args:
            enabled: True/False switches the cache; None leaves it.
            path: another SQLite cache file; None leaves it.
        """
        with self._lock:
            if enabled is not None:
                self.use_cache = bool(enabled)
            if path is not None:
                self.cache_path = Path(path)
                if self._cache is not None:
                    self._cache.close()
                self._cache = None
            self._resolved = False  # the location is resolved again on the next use

    def cache(self, open_at: Callable[[Path], Any], default_path: Callable[[], Path]) -> Any:
        """This context's call cache, opened lazily.

        Args:
            open_at: opens the cache file at a path (:class:`~sgieval.models.cache.CallCache`).
            default_path: the file when ``cache_path`` is None.

        Returns:
            The cache.
        """
        c = self._cache
        if c is not None and self._resolved:  # fast path: the location was resolved once
            return c
        with self._lock:
            path = Path(self.cache_path or default_path())
            c = self._cache
            if c is None or c.path != path:
                if c is not None:
                    c.close()
                c = self._cache = open_at(path)
            self._resolved = True
            return c

    def close(self) -> None:
        """Close the cache file this context opened (it reopens on next use)."""
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None
            self._resolved = False
            self._semaphores.clear()


_DEFAULT = CallContext()
"""The context of calls made outside any run (never changed by a run)."""

_current: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar("sgieval_call_context", default=None)


def current_call_context() -> CallContext:
    """The active run's :class:`CallContext`, else the process default.

    Returns:
        The call context.
    """
    ctx = _current.get()
    return ctx if ctx is not None else _DEFAULT


@contextlib.contextmanager
def call_context(ctx: CallContext) -> Iterator[CallContext]:
    """``with call_context(ctx): ...`` makes ``ctx`` current here and in the asyncio tasks started inside; on exit
    the previous one is restored and ``ctx``'s cache file is closed.

    Args:
        ctx: the run's call context.

    Yields:
        ``ctx``.
    """
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
        ctx.close()


_scope: contextvars.ContextVar[str | None] = contextvars.ContextVar("sgieval_prompt_scope", default=None)


def current_prompt_scope() -> str | None:
    """The prompt scope set by the innermost :class:`prompt_scope` around this call, or None.

    Returns:
        The scope key, or None.
    """
    return _scope.get()


@contextlib.contextmanager
def prompt_scope(key: str | None) -> Iterator[str | None]:
    """``with prompt_scope("sgieval:*/rigor"): ...``: the model calls made inside (and in the asyncio tasks started
    inside) belong to one family of prompts that share their start, e.g. every judge prompt of one metric.
    :func:`sgieval.models.calls.ainvoke` sends it to OpenAI chat models as ``prompt_cache_key`` and marks an
    Anthropic chat model's system message for caching.  Context-local: two runs or metrics each see their own.

    Args:
        key: the family's name, e.g. ``sgieval:<scope>/<metric>`` or ``sgieval:agent/<step>``; None or "" sets no
            scope inside the block.

    Yields:
        The scope key, or None.
    """
    token = _scope.set(key or None)
    try:
        yield key or None
    finally:
        _scope.reset(token)
