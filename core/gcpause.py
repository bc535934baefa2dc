"""The garbage collector paused while the ``sgieval`` command starts (issue 13: time to first call).

Starting a run imports LangGraph, LangChain, the openai SDK and our own modules:
about 300,000 objects that live as long as the process (modules, classes,
functions, pydantic schemas).  With the collector on, CPython runs hundreds of
collections over them while they are being created, none of which frees much:
about 0.13 s of the ~1.2 s before the first model call (``bench/e2e.py``,
2 cores).  So the console script pauses the collector (:func:`pause`) before it
parses its options, and the run ends the pause (:func:`resume`) when its
evaluation starts (or its report, for ``sgieval report``).

Ending the pause calls :func:`gc.freeze` first: everything alive at that point
moves to the permanent generation, which later collections never traverse
(the ~300,000 start-up objects are never garbage, and a full collection of the
run would otherwise walk them all again), then the collector is enabled again.
The price is that the little cyclic garbage made during start-up is never
freed (a few MiB; counted in the peak RSS of ``bench/e2e.py``).

Only the console script pauses: the Python API and ``app([...])`` leave the
host process's collector alone, and :func:`resume` is then a no-op.  Plain
reference counting frees acyclic objects at once while the collector is
paused; only reference cycles wait.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["pause", "resume"]

_LOCK = threading.Lock()
_PAUSED = False


def pause() -> bool:
    """Disable the cyclic garbage collector until :func:`resume`.  Returns
    True when this call paused it (False when it was already disabled: a host
    that turned the collector off keeps it off, and :func:`resume` then does
    nothing)."""
    global _PAUSED
    with _LOCK:
        if _PAUSED or not gc.isenabled():
            return False
        gc.disable()
        _PAUSED = True
        return True


def resume() -> None:
    """End a :func:`pause`: freeze what is alive now (:func:`gc.freeze`: the
    permanent generation) and enable the collector again.  Idempotent, and a
    no-op when nothing was paused."""
    global _PAUSED
    with _LOCK:
        if not _PAUSED:
            return
        _PAUSED = False
        gc.freeze()
        gc.enable()
