"""Errors of sgieval: every error names what is wrong and how to fix it (DESIGN.md "Conventions")."""

from __future__ import annotations

# -------------------------------------------------------------------------- errors
class SgievalError(Exception):
    """Base error.  ``what`` names the thing that is wrong (file, field, model
    string), ``fix`` says how to repair it; ``str()`` gives one line with both."""

    exit_code = 1

    def __init__(self, message: str, *, what: str | None = None, fix: str | None = None):
        self.message = message
        self.what = what
        self.fix = fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = []
        if self.what:
            parts.append(f"{self.what}: ")
        parts.append(self.message.rstrip())
        if self.fix:
            parts.append(("" if self.message.rstrip().endswith((".", "!", "?")) else ".") + f" Fix: {self.fix}")
        return "".join(parts)


class InputError(SgievalError):
    """Bad user input: a missing data folder, malformed file or field, unknown
    model string, a request that selects nothing.  CLI exit code 2."""

    exit_code = 2


class DataNotFoundError(InputError):
    """A benchmark's data could not be found in any lookup location."""


class OfflineError(SgievalError):
    """A network resource (hub download, web search, URL) is unreachable."""

    exit_code = 2


class ModelCallError(SgievalError):
    """A target, judge or agent model call failed after its retries."""


class ParseError(SgievalError):
    """A model or judge reply could not be parsed into the expected structure."""


class ToolError(SgievalError):
    """A tool (sandbox, PDF reader, search) could not run."""


class SandboxUnavailableError(ToolError):
    """No safe sandbox backend can start (e.g. bubblewrap missing)."""
