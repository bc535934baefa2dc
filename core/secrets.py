"""Keeping keys out of run folders, logs and reports: by pattern (:func:`redact_url`, :func:`redact_secrets`: URL
credentials, secret-looking query values, bare ``sk-...`` keys) and by value (:class:`SecretValues`: the keys a run
sends, masked wherever they appear, also JSON- or URL-escaped)."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

_SECRET_PARAMS = re.compile(r"(?i)^(api[-_]?key|key|token|access[-_]?token|secret|password|auth|sig|signature)$")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
_BARE_KEY = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_-]{8,}")
MASK = "***"


def redact_url(url: str | None) -> str | None:
    """``url`` without credentials: ``user:password@`` removed, query values named like keys replaced by ``***``.

    Args:
        url: a URL.

    Returns:
        The URL without credentials (None for None).
    """
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        name = parts.hostname or ""  # an IPv6 address goes back in brackets
        host = (f"[{name}]" if ":" in name else name) + (f":{parts.port}" if parts.port is not None else "")
    except ValueError:
        return _BARE_KEY.sub(lambda m: f"{m.group(1)}-{MASK}", url)
    netloc = host if ("@" in parts.netloc) else parts.netloc
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAMS.match(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_PARAMS.match(k) else v) for k, v in pairs], safe="*")
    out = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return _BARE_KEY.sub(lambda m: f"{m.group(1)}-{MASK}", out)


def redact_secrets(text: str) -> str:
    """``text`` with every URL passed through :func:`redact_url` and bare ``sk-``/``rk-``/``pk-`` keys masked.

    Args:
        text: any text.

    Returns:
        The masked text.
    """
    if not text:
        return text
    text = _URL.sub(lambda m: redact_url(m.group(0)) or "", text)
    return _BARE_KEY.sub(lambda m: f"{m.group(1)}-{MASK}", text)


KEY_ENV_VARIABLES = tuple(
    f"{name}_API_KEY"
    for name in "OPENAI ANTHROPIC GOOGLE MISTRAL GROQ TOGETHER FIREWORKS DEEPSEEK XAI COHERE E2B".split()
)
"""Environment variables whose values sgieval may send as a key (model providers, the E2B sandbox)."""


def url_secrets(url: str | None) -> list[str]:
    """The secret parts of ``url``: the user-info password (or user name without one) and key-named query values.

    Args:
        url: a URL.

    Returns:
        The secret parts; [] for None or no URL.
    """
    if not url:
        return []
    try:
        parts = urlsplit(url)
        out = [v for v in (parts.password or parts.username,) if v]
        out += [v for k, v in parse_qsl(parts.query, keep_blank_values=False) if _SECRET_PARAMS.match(k)]
    except ValueError:
        return []
    return out


class SecretValues:
    """The secret values one run sends, masked by value, also JSON-escaped and URL-encoded; ``a | b`` joins two sets.
    Values shorter than :attr:`MIN_LENGTH` are left out (a 3-letter "key" would mask ordinary words)."""

    MIN_LENGTH = 8

    def __init__(self, values: Iterable[str | None] = ()):
        vals = {v.strip() for v in values if isinstance(v, str) and len(v.strip()) >= self.MIN_LENGTH}
        self._values = frozenset(vals)
        forms: set[str] = set()
        for v in vals:
            forms |= {v, json.dumps(v, ensure_ascii=True)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1]}
            forms |= {quote(v, safe=""), quote_plus(v)}
        ordered = sorted(forms, key=len, reverse=True)  # the longest form first: no part of a key is left
        self._re = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def from_environment(cls, extra: Iterable[str | None] = ()) -> "SecretValues":
        """The values of :data:`KEY_ENV_VARIABLES` in ``os.environ`` and ``extra``.

        Args:
            extra: further secret values.

        Returns:
            The SecretValues.
        """
        return cls([*(os.environ.get(k) for k in KEY_ENV_VARIABLES), *extra])

    def __or__(self, other: "SecretValues") -> "SecretValues":
        return SecretValues([*self._values, *other._values])

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"SecretValues({len(self._values)} value(s))"

    def mask(self, text: str) -> str:
        """``text`` with every held value (and its escaped forms) replaced by ``***``, then :func:`redact_secrets`.

        Args:
            text: any text.

        Returns:
            The masked text.
        """
        if not isinstance(text, str) or not text:
            return text
        if self._re is not None:
            text = self._re.sub(MASK, text)
        return redact_secrets(text)

    def holds_any(self, text: str) -> bool:
        """Whether ``text`` contains a held value (or an escaped form of one).

        Args:
            text: any text.

        Returns:
            True when a secret is in it.
        """
        return bool(self._re is not None and isinstance(text, str) and self._re.search(text))

    def mask_data(self, value: Any) -> Any:
        """``value`` with :meth:`mask` applied to every string inside dicts (keys too), lists and tuples.

        Args:
            value: JSON-like data.

        Returns:
            The masked copy.
        """
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask_data(k): self.mask_data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.mask_data(v) for v in value)
        return value
