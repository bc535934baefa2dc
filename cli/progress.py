"""Progress of a run on stderr: on a terminal a live rich bar; otherwise the same facts (pairs done, model calls,
failed calls, elapsed time, pending batches) as one line every ``SGIEVAL_PROGRESS_EVERY`` s (default 10; 0: none),
the first after one interval and, when any was printed, one more at the end with the final counts.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

__all__ = ["RunProgress", "elapsed_text"]


def elapsed_text(seconds: float) -> str:
    """``H:MM:SS`` of a duration in seconds (>= 0), as rich's elapsed column shows it."""
    s = int(max(0.0, seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class _CallsColumn(ProgressColumn):
    """``N model calls, M failed`` (and the pending batches), read from the run's ledger at each redraw."""

    def __init__(self, counts: Callable[[], tuple[int, int]], batches: Callable[[], str] = lambda: ""):
        super().__init__()
        self.counts = counts
        self.batches = batches

    def render(self, task: Any) -> Text:
        calls, failed = self.counts()
        pending = self.batches()
        return Text(f"{calls} model calls, {failed} failed" + (f", {pending}" if pending else ""))


class RunProgress:
    """Progress display of one run (module doc), a context manager: :meth:`update` is the run's ``on_progress(done,
    total)``; :meth:`pause`/:meth:`resume` around a prompt; ``ledger_of`` and ``batches_of`` return the run's Ledger and
    BatchCollector (or None); ``every_s``: seconds between lines when ``console`` is no terminal."""

    def __init__(
        self,
        console: Console,
        ledger_of: Callable[[], Any],
        every_s: float = 10.0,
        batches_of: Callable[[], Any] | None = None,
    ):
        self.console = console
        self.ledger_of = ledger_of
        self.batches_of = batches_of
        self.every_s = every_s
        self.done = 0
        self.total: int | None = None
        self.started = time.monotonic()
        self.live = console.is_terminal
        self._paused = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._printed = False
        self.bar: Progress | None = None
        self._task: Any = None

    def counts(self) -> tuple[int, int]:
        """(model calls made, calls failed) so far."""
        ledger = self.ledger_of()
        if ledger is None:
            return 0, 0
        return int(ledger.calls_made), int(ledger.calls_failed)

    def batches(self) -> str:
        """The pending batches (``batch <id> <status> <done>/<total>``, "; "-separated), "" when none."""
        collector = self.batches_of() if self.batches_of is not None else None
        return collector.progress_text() if collector is not None else ""

    def phase(self) -> str:
        if self.total is None:
            return "starting"
        return "evaluating" if self.done < self.total else "finishing (corpus-level scores, report)"

    def line(self) -> str:
        """The progress line (module doc)."""
        calls, failed = self.counts()
        total = "?" if self.total is None else str(self.total)
        pending = self.batches()
        return (
            f"progress: {self.phase()}, {self.done}/{total} (item, target model) pairs done, {calls} model calls, "
            f"{failed} failed, {elapsed_text(time.monotonic() - self.started)} elapsed"
            + (f", {pending}" if pending else "")
        )

    def update(self, done: int, total: int) -> None:
        """The run's ``on_progress``: ``done`` of ``total`` (item, target model) pairs are evaluated."""
        self.done, self.total = done, total
        if self.bar is not None:
            self.bar.update(self._task, completed=done, total=total, description=self.phase())

    def pause(self) -> None:
        """Stop drawing (before a prompt)."""
        self._paused.set()
        if self.bar is not None:
            self.bar.stop()

    def resume(self) -> None:
        """Draw again after :meth:`pause`."""
        self._paused.clear()
        if self.bar is not None:
            self.bar.start()

    def stop(self) -> None:
        """Stop for good (the run ended or failed)."""
        self._stop.set()
        if self.bar is not None:
            self.bar.stop()

    def __enter__(self) -> "RunProgress":
        self.started = time.monotonic()
        if self.live:
            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("pairs"),
                _CallsColumn(self.counts, self.batches),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
                # 4 redraws a second: each holds the GIL for milliseconds in rich's refresh thread, which delays
                # the event loop
                refresh_per_second=4,
            )
            self.bar.start()
            self._task = self.bar.add_task("starting", total=None)
        elif self.every_s > 0:
            self._thread = threading.Thread(target=self._lines, name="sgieval-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            if self._printed and not self._thread.is_alive():
                self._print_line()

    def _print_line(self) -> None:
        self.console.print(self.line(), highlight=False, soft_wrap=True, markup=False)
        self._printed = True

    def _lines(self) -> None:
        while not self._stop.wait(self.every_s):
            if not self._paused.is_set():
                self._print_line()
