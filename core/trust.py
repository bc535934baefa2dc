"""Which settings of a run's ``config.json`` may be used with the user's credentials (issue 14 item 2).

A run folder can come from someone else.  The settings that send data or run
code elsewhere (``base_url``, ``unsafe_local_exec``, a sandbox backend other
than the local isolated one, the tools an LLM may call) are used by
``resume``/``report``/``view`` only when the user chose them:

- given again on the command line (``--base-url``, ``--sandbox``, ``--tools``,
  ``--unsafe-local-exec``), or ``--trust-config``;
- confirmed at the prompt that shows them;
- or recorded as the user's own: a run this machine's sgieval started, or
  settings confirmed before (:func:`remember`: a SHA-256 of those settings and
  the models they go with, one per line in ``<user state dir>/trusted-settings``,
  i.e. ``$XDG_STATE_HOME/sgieval/trusted-settings``, outside any run folder, so a
  shipped run folder cannot vouch for itself).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["SAFE_SANDBOXES", "FLAGS", "sensitive_settings", "fingerprint", "trust_file", "is_trusted", "remember"]

SAFE_SANDBOXES = ("auto", "bubblewrap", "bwrap")
"""Sandbox backends that run code on this machine, isolated (``auto`` picks E2B only with the user's own key)."""

FLAGS = {
    "base_url": "--base-url URL",
    "unsafe_local_exec": "--unsafe-local-exec",
    "sandbox": "--sandbox NAME",
    "tools": "--tools LIST",
}
"""How each sensitive setting is passed again on the command line."""


def sensitive_settings(config: Any) -> dict[str, Any]:
    """The settings of ``config`` (a RunConfig) that send data or run code
    elsewhere, with their values, in :data:`FLAGS` order: ``base_url`` when
    set, ``unsafe_local_exec`` when true, ``sandbox`` when not one of
    :data:`SAFE_SANDBOXES`, ``tools`` when non-empty and a judge or agent model
    (which chooses the tool calls) is configured.  ``{}``: nothing to confirm."""
    out: dict[str, Any] = {}
    if config.base_url:
        out["base_url"] = config.base_url
    if config.unsafe_local_exec:
        out["unsafe_local_exec"] = True
    if (config.sandbox or "auto").lower() not in SAFE_SANDBOXES:
        out["sandbox"] = config.sandbox
    if config.tools and (config.judges or config.agent_model):
        out["tools"] = list(config.tools)
    return out


def fingerprint(config: Any) -> str:
    """SHA-256 (64 hex digits) of ``config``'s sensitive settings and the model
    strings they are used with (targets, judges, agent)."""
    data = {
        "settings": sensitive_settings(config),
        "models": list(config.models),
        "judges": list(config.judges),
        "agent_model": config.agent_model,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def trust_file() -> Path:
    """``platformdirs.user_state_dir("sgieval")/trusted-settings`` (on Linux
    ``$XDG_STATE_HOME/sgieval/trusted-settings``, default ``~/.local/state/...``)."""
    import platformdirs

    return Path(platformdirs.user_state_dir("sgieval")) / "trusted-settings"


def is_trusted(config: Any) -> bool:
    """True when ``config`` has no sensitive setting, or the user started or
    confirmed a run with exactly these settings and models before (:func:`remember`)."""
    if not sensitive_settings(config):
        return True
    try:
        lines = trust_file().read_text(encoding="utf-8").split()
    except OSError:
        return False
    return fingerprint(config) in lines


def remember(config: Any) -> None:
    """Record ``config``'s sensitive settings as the user's own choice (best
    effort: a read-only home only means a prompt on the next resume)."""
    if not sensitive_settings(config) or is_trusted(config):
        return
    p = trust_file()
    try:
        p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(p, "a", encoding="utf-8") as f:
            f.write(fingerprint(config) + "\n")
    except OSError:
        pass
