"""A warm helper process for the report's heavy computations (start fast).

The report needs ``scipy.stats`` (bootstrap CIs, paired tests: ~0.6 s to import) and ``matplotlib`` (charts: ~0.35 s).
A replayed run spends the rest of its ~1.5 s importing LangGraph and scoring, so on a machine with a second core those
imports can happen *at the same time* in another process: the ``sgieval`` command forks one worker right at start
(:func:`warm_worker`), the worker imports the heavy modules while the run goes on, and the report hands the bootstrap,
the paired tests and the chart drawing to it (:func:`call_in_worker`).  The numbers are the same: the worker runs the
same functions on the same arguments (seeds included); only the process differs.

Without a worker -- the Python API, tests calling ``app([...])``, a platform without ``fork`` -- :func:`call_in_worker`
runs the function in the calling process, as before.  A worker that died (killed, out of memory) is never an error
either: the call then runs in the calling process.

The worker is bound to the run through a context variable (run-scoped state): two runs in one process never share one,
and the variable is reset when :func:`warm_worker`'s block ends.  The worker ignores SIGINT (Ctrl-C interrupts the run,
which then shuts the worker down), and it exits by itself when its parent process is gone (SIGKILL of ``sgieval`` leaves
no orphan behind: ``PR_SET_PDEATHSIG`` on Linux, and a parent-pid watchdog everywhere).
"""

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

__all__ = ["REPORT_MODULES", "call_in_worker", "submit_to_worker", "warm_worker", "worker_active"]

T = TypeVar("T")

#: What the report imports only to compute statistics and draw charts.
REPORT_MODULES: tuple[str, ...] = ("scipy.stats", "matplotlib.pyplot")

_ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Thread-pool sizes the worker sets to 1 unless the user set them: the bootstrap and the charts are
single-threaded, and a BLAS pool of one thread per core, started while the run imports LangGraph on the
other core, took CPU from the run (~0.08 s before the first model call on 2 cores)."""

_WORKER: ContextVar[Executor | None] = ContextVar("sgieval_warm_worker", default=None)


def _exit_with_parent(parent: int) -> None:
    """Worker side: die with the parent process (never an orphan holding memory)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="sgieval-worker-watchdog", daemon=True).start()


def _prepare(parent: int, modules: tuple[str, ...]) -> None:
    """Worker initializer: ignore Ctrl-C, die with the parent, import ``modules`` (matplotlib on the headless Agg
    backend).  An import that fails here is not an error: the function that needs it raises in the worker, and the
    exception reaches the caller as it would in-process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent)
    for var in _ONE_THREAD:  # before numpy loads: its BLAS would start a thread per core
        os.environ.setdefault(var, "1")
    for name in modules:
        try:
            if name.startswith("matplotlib"):
                import matplotlib

                matplotlib.use("Agg")
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up only
            pass


def _ready() -> int:
    return os.getpid()


@contextlib.contextmanager
def warm_worker(modules: Sequence[str] = REPORT_MODULES) -> Iterator[Executor | None]:
    """Fork one worker process now that imports ``modules``, and bind it to the current context for the block:
    :func:`call_in_worker` inside the block (and in the asyncio tasks and threads started from it, which copy the
    context) runs its function in the worker.  Yields the executor, or None where ``fork`` is unavailable (then nothing
    changes).

    Fork before the process starts threads (the ``sgieval`` command does it before parsing its options).  When the block
    ends, the worker is shut down without waiting for it."""
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
    pool.submit(_ready)  # start the worker now: it imports while the run goes on
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
    """``fn(*args, **kwargs)``, in the warm worker when one is bound to the current context, else here.  ``fn`` must be
    a module-level function and its arguments and result picklable.  An exception raised by ``fn`` is raised here as it
    would be in-process; a dead worker makes the call run here instead (never an error of its own).

    Args:
        fn: a module-level function.
        args: its arguments.
        kwargs: its keyword arguments.

    Returns:
        ``fn``'s result.
    """
    return submit_to_worker(fn, *args, **kwargs)()


def submit_to_worker(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Callable[[], T]:
    """Start ``fn(*args, **kwargs)`` in the warm worker when one is bound to the current context and return
    a function that waits for its result (what :func:`call_in_worker` returns, or raises); the caller works on
    meanwhile.  Without a worker (or with a dead one) the returned function computes it here, when called.

    Args:
        fn: a module-level function.
        args: its arguments.
        kwargs: its keyword arguments.

    Returns:
        The waiting function.
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
