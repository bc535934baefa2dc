"""Settings: every ``SGIEVAL_*`` environment variable, read and validated in one place (:class:`Settings`). A run reads
it once when it starts (kept in its run context, printed in the run header and stored, secrets masked, in
``config.json``); code outside a run reads the environment afresh (:func:`current_settings`). A bad value raises
InputError naming the variable and the fix. ``install.sh`` reads a few more variables of its own."""

from __future__ import annotations

import contextlib
import contextvars
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

import os
import re

from pydantic import AliasChoices, Field, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import FieldProblem, problem_to_input_error
from .secrets import redact_url

OPENAI_TRANSPORTS = ("direct", "sdk")
_ENDPOINT_VAR = re.compile(r"^[A-Z][A-Z0-9_]*_(BASE_URL|API_KEY)$")
NETWORK_MODES = ("auto", "online", "offline")


def _one_of(v: Any, allowed: Sequence[str], what: str, fix: str) -> str:
    """``v`` case-folded and stripped (empty: ``allowed[0]``); FieldProblem when it is not one of ``allowed``."""
    t = str(v).strip().lower() or allowed[0]
    if t not in allowed:
        raise FieldProblem(f"unknown {what} {v!r}", fix)
    return t


class Settings(BaseSettings):
    """The ``SGIEVAL_*`` variables (paths expanded; empty strings count as unset), and the keys and endpoints the run
    header names. ``network``: ``auto`` probes; ``progress_every``: seconds between progress lines on a stderr that is
    no terminal (0: none); ``fast_start``: the console script's start-up and exit tricks (:mod:`.startup`);
    ``batch_window``: ``--batch`` seconds without a new request before a batch is submitted; ``batch_poll``: seconds
    between two polls of a pending batch."""

    model_config = SettingsConfigDict(
        env_prefix="SGIEVAL_", extra="ignore", case_sensitive=False, env_ignore_empty=True, frozen=True
    )

    cache_dir: Path | None = None
    no_cache: bool = False
    data: Path | None = None
    rubric_dir: Path | None = None
    openai_transport: Literal["direct", "sdk"] = "direct"
    local_threads: int = 1
    network: Literal["auto", "online", "offline"] = "auto"
    progress_every: float = 10.0
    fast_start: bool = True
    batch_window: float = 2.0
    batch_poll: float = 30.0
    openai_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("OPENAI_API_KEY"))
    e2b_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("E2B_API_KEY"))
    openai_base_url: str | None = Field(default=None, validation_alias=AliasChoices("OPENAI_BASE_URL"))

    _endpoints: dict[str, str] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any) -> None:
        """Snapshot the endpoint variables (``<NAME>_BASE_URL``, ``<NAME>_API_KEY``): a run sees those it started with."""
        self._endpoints.update({k: v for k, v in os.environ.items() if _ENDPOINT_VAR.match(k) and v.strip()})

    def env_value(self, name: str) -> str | None:
        """The endpoint variable ``name`` (``VLLM_BASE_URL``, ``OPENAI_*``) as read by these settings.

        Args:
            name: the variable name.

        Returns:
            The value, or None when unset or empty.
        """
        if name == "OPENAI_BASE_URL":
            return self.openai_base_url
        if name == "OPENAI_API_KEY":
            return self.openai_api_key.get_secret_value() if self.openai_api_key is not None else None
        return self._endpoints.get(name)

    @field_validator("cache_dir", "data", "rubric_dir", mode="before")
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return Path(v).expanduser() if isinstance(v, (str, Path)) and str(v).strip() else None

    @field_validator("no_cache", "fast_start", mode="before")
    @classmethod
    def _flag(cls, v: Any) -> bool:
        return v.strip().lower() in ("1", "true", "yes", "on") if isinstance(v, str) else bool(v)

    @field_validator("openai_transport", mode="before")
    @classmethod
    def _transport(cls, v: Any) -> str:
        return _one_of(v, OPENAI_TRANSPORTS, "OpenAI transport", "set it to 'direct' (default) or 'sdk', or unset it")

    @field_validator("local_threads", mode="before")
    @classmethod
    def _threads(cls, v: Any) -> int:
        try:
            return max(1, int(str(v).strip()))
        except ValueError:
            raise FieldProblem("must be a positive integer", "unset it or set e.g. SGIEVAL_LOCAL_THREADS=2") from None

    @field_validator("progress_every", "batch_window", "batch_poll", mode="before")
    @classmethod
    def _seconds(cls, v: Any, info: Any) -> float:
        try:
            t = float(str(v).strip())
        except ValueError:
            t = -1.0
        least = 0.01 if info.field_name == "batch_poll" else 0.0
        if not t >= least or t == float("inf"):
            fix = f"unset it or set e.g. SGIEVAL_{info.field_name.upper()}=5"
            if info.field_name == "progress_every":
                fix = "unset it (a line every 10 s) or set e.g. SGIEVAL_PROGRESS_EVERY=30"
            raise FieldProblem(f"must be a number of seconds >= {least:g}", fix)
        return t

    @field_validator("network", mode="before")
    @classmethod
    def _network(cls, v: Any) -> str:
        return _one_of(v, NETWORK_MODES, "network mode", "set it to auto (probe), online or offline, or unset it")

    def shown(self) -> dict[str, Any]:
        """The settings as printed in the run header and stored in ``config.json``.

        Returns:
            ``SGIEVAL_<NAME>`` -> value (paths as text, unset None); secrets as ``"set"`` / ``"not set"``.
        """
        out: dict[str, Any] = {}
        for name, env in ENV_NAMES.items():
            v = getattr(self, name)
            if name.endswith("_api_key"):
                v = "set" if v is not None and v.get_secret_value() else "not set"
            out[env] = redact_url(v) if name == "openai_base_url" else str(v) if isinstance(v, Path) else v
        return out

    def header_line(self) -> str:
        """One line for the run header: ``SGIEVAL_NO_CACHE=False, ...``.

        Returns:
            The line.
        """
        return ", ".join(f"{k}={'(unset)' if v is None else v}" for k, v in self.shown().items())


ENV_NAMES = {
    name: name.upper() if f.validation_alias else f"SGIEVAL_{name.upper()}" for name, f in Settings.model_fields.items()
}
"""Settings field -> the environment variable it reads."""


def load_settings() -> Settings:
    """Read and validate the environment now.

    Returns:
        The settings.

    Raises:
        InputError: a bad value, naming the variable.
    """
    try:
        return Settings()
    except ValidationError as e:
        raise problem_to_input_error(e, ENV_NAMES) from None


_run_settings: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("sgieval_settings", default=None)


def current_settings() -> Settings:
    """The running run's settings (read once when it started), else the environment read now (:func:`load_settings`).

    Returns:
        The settings.
    """
    s = _run_settings.get()
    return s if s is not None else load_settings()


@contextlib.contextmanager
def use_settings(settings: Settings) -> Iterator[Settings]:
    """``with use_settings(s): ...`` makes ``s`` what :func:`current_settings` returns in this context (and its tasks).

    Args:
        settings: the run's settings.

    Yields:
        ``settings``.
    """
    token = _run_settings.set(settings)
    try:
        yield settings
    finally:
        _run_settings.reset(token)
