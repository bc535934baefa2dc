"""The run-scoped settings of model calls (cache switch and file, concurrency limits): the :class:`CallContext` a
run activates with :func:`call_context` (a contextvar: invisible to other runs), else the process default.
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


@dataclass(eq=False)
class CallContext:
    """What one run configures for its model calls: ``use_cache`` (None: ``SGIEVAL_NO_CACHE``), ``limits`` (in-flight
    calls per provider, ``"*"`` for the rest), ``timeout_s`` (per attempt); it owns its semaphores and cache."""

    use_cache: bool | None = None
    cache_path: Path | None = None
    limits: dict[str, int] = field(default_factory=lambda: {"*": DEFAULT_MAX_CONCURRENCY})
    timeout_s: float | None = None
    secrets: Any = None
    """The run's :class:`~sgieval.core.SecretValues`, masked in replies before the call cache keeps them."""
    batches: Any = None
    """The run's :class:`~sgieval.models.batch_collector.BatchCollector` (None: made on first use)."""
    _semaphores: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]]" = field(
        default_factory=weakref.WeakKeyDictionary, repr=False
    )
    _cache: Any = field(default=None, repr=False)
    _resolved: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def set_limit(self, provider: str, n: int) -> None:
        """Bound in-flight calls that start afterwards.

        Args:
            provider: a provider name, or ``"*"``/``"all"`` (every provider, dropping the overrides).
            n: most calls in flight (>= 1, else ValueError).
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"max concurrency must be >= 1, got {n}")
        every = provider in ("*", "all")
        with self._lock:
            self.limits = {"*": n} if every else {**self.limits, provider: n}
            for sems in list(self._semaphores.values()):
                if every:
                    sems.clear()
                sems.pop(provider, None)

    def limit(self, provider: str, default: int | None = None) -> int:
        """The in-flight limit for ``provider``: its own, else ``default``, else the limit for every provider.

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
        """This context's semaphore for ``provider`` on the running event loop (its limit fixed when made).

        Args:
            provider: a provider name.
            default: the model's own limit, if it has one.

        Returns:
            The semaphore.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            sems = self._semaphores.setdefault(loop, {})
            sem = sems.get(provider)
            if sem is None:
                sem = sems[provider] = asyncio.Semaphore(self.limit(provider, default))
            return sem

    def cache_enabled(self) -> bool:
        """Whether the call cache is on.

        Returns:
            ``use_cache`` when set, else not ``SGIEVAL_NO_CACHE``.
        """
        if self.use_cache is not None:
            return bool(self.use_cache)
        return not current_settings().no_cache

    def configure_cache(self, *, enabled: bool | None = None, path: str | Path | None = None) -> None:
        """Switch this context's cache on/off and/or point it at another SQLite file.

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
    """Make ``ctx`` current here and in the asyncio tasks started inside; on exit close its cache file.

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
    """The model calls made inside belong to one family of prompts sharing their start (the provider's prompt
    cache is asked for them).

    Args:
        key: the family's name, e.g. ``sgieval:<scope>/<metric>``; None or "" sets no scope.

    Yields:
        The scope key, or None.
    """
    token = _scope.set(key or None)
    try:
        yield key or None
    finally:
        _scope.reset(token)
