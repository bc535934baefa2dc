"""A warm helper process for the report's heavy computations: ``scipy.stats`` and ``matplotlib`` load in a worker the
``sgieval`` command forks at start (:func:`warm_worker`) while the run goes on, and the report's bootstraps, tests and
charts run there (:func:`call_in_worker`; the same functions on the same arguments, so the same numbers). Without a
live worker, calls run in the calling process."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

#: What the report imports only to compute statistics and draw charts.
REPORT_MODULES: tuple[str, ...] = ("scipy.stats", "matplotlib.pyplot")

_ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Thread-pool sizes the worker sets to 1 unless the user set them (a BLAS pool per core takes CPU from the run)."""

_WORKER: ContextVar[Executor | None] = ContextVar("sgieval_warm_worker", default=None)


def _exit_with_parent(parent: int) -> None:
    """Worker side: die with the parent process (never an orphan holding memory)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="sgieval-worker-watchdog", daemon=True).start()


def _prepare(parent: int, modules: tuple[str, ...]) -> None:
    """Worker initializer: ignore Ctrl-C, die with the parent, import ``modules`` (matplotlib on Agg); a failed import
    here is no error (the function that needs it raises as it would in-process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent)
    for var in _ONE_THREAD:  # before numpy loads: its BLAS would start a thread per core
        os.environ.setdefault(var, "1")
    for name in modules:
        with contextlib.suppress(Exception):  # a warm-up only
            if name.startswith("matplotlib"):
                import matplotlib

                matplotlib.use("Agg")
            importlib.import_module(name)


@contextlib.contextmanager
def warm_worker(modules: Sequence[str] = REPORT_MODULES) -> Iterator[Executor | None]:
    """Fork one worker process that imports ``modules``, bound to the current context for the block; yields the
    executor, or None without ``fork``. Fork before the process starts threads."""
    if not hasattr(os, "fork"):
        yield None
        return
    import multiprocessing

    pool = ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_prepare,
        initargs=(os.getpid(), tuple(modules)),
    )
    pool.submit(os.getpid)  # start the worker now: it imports while the run goes on
    token = _WORKER.set(pool)
    try:
        yield pool
    finally:
        _WORKER.reset(token)
        pool.shutdown(wait=False, cancel_futures=True)


def worker_active() -> bool:
    """True inside a :func:`warm_worker` block (the report's imports happen there).

    Returns:
        True inside the block.
    """
    return _WORKER.get() is not None


def call_in_worker(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in the warm worker bound to the current context, else here (also when it died).

    Args:
        fn: a module-level function (picklable, as its arguments and result).
        args: its arguments.
        kwargs: its keyword arguments.

    Returns:
        ``fn``'s result.
    """
    return submit_to_worker(fn, *args, **kwargs)()


def submit_to_worker(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Callable[[], T]:
    """Start ``fn(*args, **kwargs)`` in the warm worker (if bound); the caller works on meanwhile.

    Args:
        fn: a module-level function.
        args: its arguments.
        kwargs: its keyword arguments.

    Returns:
        A function that waits for the result as :func:`call_in_worker`.
    """
    pool = _WORKER.get()
    if pool is None:
        return lambda: fn(*args, **kwargs)
    try:
        future = pool.submit(fn, *args, **kwargs)
    except (BrokenProcessPool, RuntimeError):  # worker gone or pool shut down
        return lambda: fn(*args, **kwargs)

    def result() -> T:
        try:
            return future.result()
        except BrokenProcessPool:
            return fn(*args, **kwargs)

    return result
