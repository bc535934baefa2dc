"""Shared tool types: the sandbox interface every backend implements (bubblewrap, local default; E2B, cloud; a plain
subprocess, ``--unsafe-local-exec``)."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, Field

KilledReason = Literal["timeout", "cpu_time", "memory", "output_limit", "process_limit", "signal"]

KILLED_TEXT: dict[str, str] = {
    "timeout": "killed: wall-time limit",
    "cpu_time": "killed: CPU-time limit",
    "memory": "killed: memory limit",
    "output_limit": "killed: output limit",
    "process_limit": "stopped: process limit",
    "signal": "killed by a signal",
}
"""How each ``killed_reason`` is shown in rationales, evidence and reports."""


class ExecResult(BaseModel):
    """Outcome of one sandboxed run: ``stdout``/``stderr`` decoded and cut at the output limit with a marker line;
    ``exit_code`` negative for a signal, None when never started; ``wall_time_s`` seconds of the main program (setup
    scripts excluded); ``killed_reason`` the limit that ended it; ``files`` the requested output files (name -> text).
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    wall_time_s: float = 0.0
    peak_memory_mb: float | None = None
    timed_out: bool = False
    killed_reason: KilledReason | None = None
    files: dict[str, str] = Field(default_factory=dict)
    backend: str = ""
    setup_failed: bool = False

    @property
    def outcome(self) -> str:
        """How the run ended, for people: ``"killed: memory limit"`` (and the other :data:`KILLED_TEXT` lines) when a
        limit ended it, ``"never started"`` without an exit code, else ``"return code <n>"``."""
        if self.killed_reason:
            return KILLED_TEXT[self.killed_reason]
        if self.exit_code is None:
            return "never started"
        return f"return code {self.exit_code}"


class Sandbox(Protocol):
    """A place to run untrusted Python: ``run`` writes ``files`` into a fresh work directory, runs ``setup_scripts`` in
    order with the same limits (one failing sets ``setup_failed``, skips the rest), then ``code`` as ``main.py``."""

    name: str

    def run(
        self,
        code: str,
        *,
        files: dict[str, str | bytes] | None = None,
        setup_scripts: list[str] | None = None,
        timeout_s: float = 60.0,
        output_files: list[str] | None = None,
    ) -> ExecResult:
        """Run ``code`` in the sandbox.

        Args:
            code: the Python program, run as ``main.py`` in a fresh work directory.
            files: name -> text or bytes written first (relative names; "main.py" is reserved).
            setup_scripts: names among ``files`` run first, in order, with the same limits.
            timeout_s: wall seconds per program (> 0).
            output_files: names read back into ``ExecResult.files`` after the main program.

        Returns:
            The main program's ExecResult (a failed setup script's, with ``setup_failed=True``).

        Raises:
            InputError: bad file names.
            SandboxUnavailableError: the backend cannot start (or cannot start its interpreter).
        """
        ...
