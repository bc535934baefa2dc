"""The console script's process start-up and exit, in one place (only the ``sgieval`` console script enters
:class:`ConsoleProcess`). For ``ask``, ``resume`` and ``report`` the garbage collector is paused while the command
imports, then what is alive is frozen (:meth:`ConsoleProcess.run_begins`), and a warm worker is forked
(:func:`sgieval.core.offload.warm_worker`); every command ends promptly (:meth:`ConsoleProcess.exit`: threads joined,
``atexit`` run, JSONL files synced, streams flushed, ``os._exit``). ``SGIEVAL_FAST_START=0`` switches it all off."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from typing import Any, NoReturn

from .store import sync_open_stores

YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections once the pause ends (CPython's default: 700)."""


def exit_status(code: Any) -> int:
    """The process exit status of a ``SystemExit`` code: None -> 0, an int as it is, a message (printed) -> 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


class ConsoleProcess:
    """The start-up and exit of the ``sgieval`` process (module doc).

    Args:
        heavy: whether the command runs an evaluation or writes a report (the pause and the worker are for those).
        enabled: the tricks on (None: ``SGIEVAL_FAST_START``, default on).
    """

    def __init__(self, *, heavy: bool, enabled: bool | None = None):
        if enabled is None:
            from .settings import load_settings

            enabled = True
            with contextlib.suppress(Exception):  # a bad setting is reported by the command itself
                enabled = load_settings().fast_start
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
        """End the collector pause (idempotent): freeze what is alive, enable the collector (:data:`YOUNG_THRESHOLD`)."""
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
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(status)


_current: list[ConsoleProcess] = []


def run_begins() -> None:
    """End the console script's collector pause, if one is running (the CLI calls this when its run begins)."""
    for p in list(_current):
        p.run_begins()
