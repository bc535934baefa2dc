"""Run-scoped logging (DESIGN.md "Conventions"): a run opens its own structlog sink (:class:`run_logging`: JSON to the
run folder, human lines to stderr); :func:`get_logger` sends events there inside a run, else to the host's
``structlog.get_logger("sgieval")``. The host process's logging configuration is never touched."""

from __future__ import annotations

import contextvars
import datetime as _dt
import json
import sys
import traceback
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterator, MutableMapping

import structlog

from .errors import InputError
from .files import open_append_in
from .secrets import SecretValues

_sink: contextvars.ContextVar[Any] = contextvars.ContextVar("sgieval_run_log", default=None)


class _RunLogger:
    """Forwards each log call to the current run's logger, else to the host's ``structlog.get_logger(name)``."""

    def __init__(self, name: str):
        self._name = name

    def _target(self) -> Any:
        sink = _sink.get()
        return sink if sink is not None else structlog.get_logger(self._name)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)
        return lambda *args, **kw: getattr(self._target(), method)(*args, **kw)


def get_logger(name: str = "sgieval") -> Any:
    """A logger for sgieval modules; safe to create at import time.

    Args:
        name: the logger name.

    Returns:
        The structlog logger.
    """
    return _RunLogger(name)


def _append_line(run_dir: Path, line: Any, mask: Callable[[str], str]) -> None:
    """Append ``line`` as masked JSON to ``run_dir/log.jsonl``, following no link."""
    with open_append_in(run_dir, run_dir / "log.jsonl") as f:
        f.write((mask(json.dumps(line, default=str)) + "\n").encode("utf-8"))


def _to_file(
    run_dir: Path, secrets: SecretValues
) -> Callable[[Any, str, MutableMapping[str, Any]], MutableMapping[str, Any]]:
    def to_file(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        # no key in the log: the file line and the terminal line are masked alike
        for k, v in list(event.items()):
            event[k] = secrets.mask_data(v)
        with suppress(InputError):  # a link planted as log.jsonl: never written through (the stderr line stays)
            _append_line(run_dir, event, secrets.mask)
        return event

    return to_file


def log_traceback(run_dir: str | Path, run_id: str, exc: BaseException) -> None:
    """Append ``exc`` with its full traceback to ``run_dir/log.jsonl`` as one JSON line, keys masked (best effort).

    Args:
        run_dir: the run folder.
        run_id: the run id.
        exc: the exception.
    """
    line = {
        "event": "unexpected error",
        "level": "error",
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "run_id": run_id,
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }
    with suppress(OSError, InputError):  # best effort: a link planted as log.jsonl is not written through
        if Path(run_dir).is_dir():
            _append_line(Path(run_dir), line, SecretValues.from_environment().mask)


def _console_view(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """The stderr line omits the bound run id (the JSON line keeps it)."""
    event.pop("run_id", None)
    return event


@contextmanager
def run_logging(run_dir: str | Path, run_id: str, *, stream: Any = None, secrets: Any = None) -> Iterator[Any]:
    """``with run_logging(run_dir, run_id): ...``: this context's sgieval log events go to ``run_dir/log.jsonl`` and as
    a human line to ``stream``, ``secrets`` masked in both.

    Args:
        run_dir: the run folder.
        run_id: the run id, bound to every event.
        stream: the stream of the human lines (default ``sys.stderr``).
        secrets: the run's SecretValues (default: masking by pattern only).

    Yields:
        The run's logger.
    """
    logger = structlog.wrap_logger(
        structlog.PrintLogger(stream if stream is not None else sys.stderr),
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            _to_file(Path(run_dir), secrets or SecretValues()),
            _console_view,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        cache_logger_on_first_use=False,
    )
    with structlog.contextvars.bound_contextvars(run_id=run_id):
        token = _sink.set(logger)
        try:
            yield logger
        finally:
            _sink.reset(token)
