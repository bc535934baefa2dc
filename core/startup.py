"""The console script's process start-up and exit, in one place: only the ``sgieval`` console script enters
:class:`ConsoleProcess` (never the Python API, ``app([...])`` or agent code).

For ``ask``, ``resume`` and ``report`` (timings: ``python -m sgieval.bench.e2e``, README performance section):

- the garbage collector is paused while the command imports LangGraph, LangChain and ours (~300,000 long-lived objects
  that hundreds of collections would not free); at :meth:`ConsoleProcess.run_begins` (called by the CLI command) all
  alive is frozen (:func:`gc.freeze`) and the collector re-enabled with a young-generation threshold of 10,000;
- a warm worker (:func:`sgieval.core.offload.warm_worker`), forked before any thread, imports scipy.stats and
  matplotlib on the second core for the report's bootstrap, paired tests and charts.

Every command then ends promptly (:meth:`ConsoleProcess.exit`): non-daemon threads joined, ``atexit`` run, open JSONL
files synced, stdout and stderr flushed, ``os._exit`` skipping only module teardown. ``SGIEVAL_FAST_START=0`` switches
all of it off (a plain program exiting through ``sys.exit``).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from typing import Any, NoReturn

from .store import sync_open_stores

__all__ = ["ConsoleProcess", "exit_status"]

YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections once the pause ends (CPython's default: 700)."""


def exit_status(code: Any) -> int:
    """The process exit status of a ``SystemExit`` code: None -> 0, an int as it is, anything else (a message,
    which is printed to stderr) -> 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


class ConsoleProcess:
    """The start-up and exit of the ``sgieval`` process (module doc).

    Args:
        heavy: whether the command runs an evaluation or writes a report (the collector pause and the warm
            worker are for those only; a long-lived command such as ``view --serve`` keeps the collector on).
        enabled: the tricks on (None: ``SGIEVAL_FAST_START``, default on).
    """

    def __init__(self, *, heavy: bool, enabled: bool | None = None):
        if enabled is None:
            from .settings import load_settings

            try:
                enabled = load_settings().fast_start
            except Exception:  # noqa: BLE001 - a bad setting is reported by the command itself
                enabled = True
        self.enabled = bool(enabled)
        self.heavy = heavy
        self.paused = False
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()

    def __enter__(self) -> "ConsoleProcess":
        if self.enabled and self.heavy:
            if gc.isenabled():
                gc.disable()
                self.paused = True
            from .offload import warm_worker

            self._stack.enter_context(warm_worker())
        _current.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self in _current:
            _current.remove(self)
        self.run_begins()
        self._stack.close()

    def run_begins(self) -> None:
        """End the collector pause (idempotent; a no-op when nothing was paused): freeze what is alive, enable
        the collector with the young threshold of :data:`YOUNG_THRESHOLD`."""
        with self._lock:
            if not self.paused:
                return
            self.paused = False
            gc.freeze()
            gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
            gc.enable()

    def exit(self, code: Any) -> NoReturn:
        """End the process with ``code``: promptly when enabled (module doc), else by ``sys.exit``.

        Args:
            code: the exit code (None, an int, or a message).
        """
        status = exit_status(code)
        if not self.enabled:
            self.__exit__(None, None, None)
            sys.exit(status)
        try:
            self.__exit__(None, None, None)
            shutdown = getattr(threading, "_shutdown", None)  # joins non-daemon threads, as Py_FinalizeEx does
            if shutdown is not None:
                shutdown()
            atexit._run_exitfuncs()
            sync_open_stores()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(status)


_current: list[ConsoleProcess] = []


def run_begins() -> None:
    """End the console script's collector pause, if one is running (the CLI calls this when its run begins)."""
    for p in list(_current):
        p.run_begins()
