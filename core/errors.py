"""Errors of sgieval: every error names what is wrong and how to fix it (DESIGN.md "Conventions")."""

from __future__ import annotations

from typing import Any


# -------------------------------------------------------------------------- errors
class SgievalError(Exception):
    """Base error: ``what`` names the thing that is wrong, ``fix`` how to repair it; ``str()`` is one line with both."""

    exit_code = 1

    def __init__(self, message: str, *, what: str | None = None, fix: str | None = None):
        self.message = message
        self.what = what
        self.fix = fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The error as one line for a terminal or a log.

        Returns:
            ``"<what>: <message>. Fix: <fix>"`` with the parts the error has.
        """
        msg = self.message.rstrip()
        fix = ("" if msg.endswith((".", "!", "?")) else ".") + f" Fix: {self.fix}" if self.fix else ""
        return (f"{self.what}: " if self.what else "") + msg + fix


class InputError(SgievalError):
    """Bad user input (missing data folder, malformed file or field, unknown model string, empty selection); exit 2."""

    exit_code = 2


class DataNotFoundError(InputError):
    """A benchmark's data could not be found in any lookup location."""


class TamperedFileError(InputError):
    """A file of a run folder holds what sgieval never writes (e.g. a checkpoint value outside the allowlist)."""


class OfflineError(SgievalError):
    """A network resource (hub download, web search, URL) is unreachable."""

    exit_code = 2


class ModelCallError(SgievalError):
    """A target, judge or agent model call failed after its retries."""


class ToolError(SgievalError):
    """A tool (sandbox, PDF reader, search) could not run."""


class SandboxUnavailableError(ToolError):
    """No safe sandbox backend can start (e.g. bubblewrap missing)."""


def validation_errors_text(e: BaseException, most: int | None = None) -> str | None:
    """The problems of a pydantic ``ValidationError`` as one line, ``"field.sub: message; ..."``.

    Args:
        e: the exception.
        most: how many problems at most (None: all).

    Returns:
        The line, or None when ``e`` has no readable ``errors()``.
    """
    errors = getattr(e, "errors", None)
    if not callable(errors):
        return None
    try:
        return "; ".join(
            (f"{'.'.join(map(str, x['loc']))}: " if x.get("loc") else "") + str(x.get("msg", ""))
            for x in errors()[:most]
        )
    except Exception:  # noqa: BLE001 - an errors() of another shape: the caller falls back to the text
        return None


class FieldProblem(ValueError):
    """A pydantic validator's complaint with its fix (``{field}`` placeholders get the caller's spelling of the option);
    ``field`` overrides the field reported on; ``value`` follows the option name."""

    def __init__(self, reason: str, fix: str, *, field: str | None = None, value: str | None = None):
        self.reason, self.fix, self.field, self.value = reason, fix, field, value
        super().__init__(reason)


class _OptionNames(dict):
    def __missing__(self, key: str) -> str:
        return key


def problem_to_input_error(e: Any, names: dict[str, str] | None = None, default_what: str = "settings") -> InputError:
    """The first error of ``e`` as one InputError naming ``names[field]`` (or the field); reason and fix from a
    FieldProblem, else pydantic's message with a generic fix.

    Args:
        e: a pydantic ValidationError (or a FieldProblem).
        names: field -> how the caller names it.
        default_what: the ``what`` of an error without a field.

    Returns:
        The InputError.
    """
    names = names or {}
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    cause = (err.get("ctx") or {}).get("error")
    field = (
        cause.field if isinstance(cause, FieldProblem) and cause.field else str(err["loc"][0]) if err.get("loc") else ""
    )
    what = names.get(field, loc or field or default_what)
    if isinstance(cause, FieldProblem):
        if cause.value is not None:
            what = f"{what} {cause.value}"
        return InputError(cause.reason, what=what, fix=cause.fix.format_map(_OptionNames(names)))
    msg = str(err.get("msg", "invalid value"))
    return InputError(
        msg[0].lower() + msg[1:] if msg else "invalid value", what=what, fix="check the value (see README, Usage)"
    )


class RunStoppedError(SgievalError):
    """A fault that stops the whole run at its first occurrence instead of being recorded item by item; exit code 2."""

    exit_code = 2


class CredentialsError(RunStoppedError):
    """An endpoint answered 401/403: the key is missing, wrong or not allowed for the model."""


class CacheCorruptError(RunStoppedError):
    """The call cache file is not a readable SQLite database."""
