"""Which settings of a run's ``config.json`` may be used with the user's credentials: a received folder's settings that
send data or run code elsewhere, and its billed models, are used only when given again, confirmed, or recorded as the
user's own (a SHA-256 per line in the user's state folder, outside any run folder, so a folder cannot vouch for
itself). Its ``"yes": true`` holds only for a run this machine started (:func:`is_own_run`)."""

from __future__ import annotations

import hashlib
import json
from contextlib import suppress
from pathlib import Path
from typing import Any

import platformdirs

from .modelref import ModelRef

SAFE_SANDBOXES = ("auto", "bubblewrap", "bwrap")
"""Sandbox backends that run code on this machine, isolated (``auto`` picks E2B only with the user's own key)."""

FLAGS: dict[str, str | None] = {
    "base_url": "--base-url URL",
    "unsafe_local_exec": "--unsafe-local-exec",
    "sandbox": "--sandbox NAME",
    "tools": "--tools LIST",
    "models": None,
    "judges": None,
    "added_judges": None,
    "agent_model": None,
}
"""How each sensitive setting is passed again on the command line (None: only the prompt or ``--trust-config``)."""


def live_models(names: Any) -> list[str]:
    """The model strings of ``names`` (a list, a string or None) that call a model service (may cost money)."""
    if not names:
        return []
    if isinstance(names, str):
        names = [names]
    return [str(n) for n in names if not ModelRef.parse(str(n), strict=False).offline]


def sensitive_settings(config: Any) -> dict[str, Any]:
    """The settings of ``config`` that send data or run code elsewhere, and its models that call a model service
    (:func:`live_models`), in :data:`FLAGS` order.

    Args:
        config: a RunConfig.

    Returns:
        setting -> value; ``{}``: nothing to confirm.
    """
    out: dict[str, Any] = {}
    if config.base_url:
        out["base_url"] = config.base_url
    if config.unsafe_local_exec:
        out["unsafe_local_exec"] = True
    if (config.sandbox or "auto").lower() not in SAFE_SANDBOXES:
        out["sandbox"] = config.sandbox
    if config.tools and (config.judges or getattr(config, "added_judges", None) or config.agent_model):
        out["tools"] = list(config.tools)
    for key in ("models", "judges", "added_judges"):
        live = live_models(getattr(config, key, None))
        if live:
            out[key] = live
    if live_models(getattr(config, "agent_model", None)):
        out["agent_model"] = config.agent_model
    return out


def fingerprint(config: Any) -> str:
    """SHA-256 (64 hex digits) of ``config``'s sensitive settings and their model strings (targets, judges, agent)."""
    data = {
        "settings": sensitive_settings(config),
        "models": list(config.models),
        "judges": list(config.judges),
        "agent_model": config.agent_model,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def trust_file() -> Path:
    """``platformdirs.user_state_dir("sgieval")/trusted-settings``."""
    return Path(platformdirs.user_state_dir("sgieval")) / "trusted-settings"


def run_fingerprint(config: Any) -> str:
    """SHA-256 (64 hex digits) of the run id with :func:`fingerprint`: the mark of a run this machine started."""
    data = {"run_id": config.run_id, "fingerprint": fingerprint(config)}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _trusted_lines() -> list[str]:
    try:
        return trust_file().read_text(encoding="utf-8").split()
    except OSError:
        return []


def is_trusted(config: Any) -> bool:
    """Whether ``config`` has no sensitive setting, or these settings and models were started or confirmed before.

    Args:
        config: a RunConfig.

    Returns:
        True when trusted.
    """
    if not sensitive_settings(config):
        return True
    lines = _trusted_lines()
    return fingerprint(config) in lines or run_fingerprint(config) in lines


def is_own_run(config: Any) -> bool:
    """True when this machine started the run of ``config`` with exactly these settings (:func:`remember_run`).

    Args:
        config: a RunConfig.

    Returns:
        True for this machine's own run.
    """
    return run_fingerprint(config) in _trusted_lines()


def _append(line: str) -> None:
    p = trust_file()
    with suppress(OSError):
        p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(p, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def remember(config: Any) -> None:
    """Record ``config``'s sensitive settings as the user's choice (best effort: a read-only home means a prompt later).

    Args:
        config: a RunConfig.
    """
    if not is_trusted(config):  # trusted: nothing sensitive, or already recorded
        _append(fingerprint(config))


def remember_run(config: Any) -> None:
    """Record the run of ``config`` as started on this machine, so its ``yes`` and settings hold on resume here."""
    if not is_own_run(config):
        _append(run_fingerprint(config))
