"""Keeping keys out of run folders, logs and reports (issue 14 item 8).

A key can ride inside a URL (``http://user:sk-...@host/v1``, ``?api_key=...``).
:func:`redact_url` drops the user-info part and masks secret-looking query
values; :func:`redact_secrets` does the same for URLs inside free text and
masks bare OpenAI-style keys (``sk-...``).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact_url", "redact_secrets"]

_SECRET_PARAMS = re.compile(r"(?i)^(api[-_]?key|key|token|access[-_]?token|secret|password|auth|sig|signature)$")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
_BARE_KEY = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_-]{8,}")
MASK = "***"


def redact_url(url: str | None) -> str | None:
    """``url`` without credentials: the ``user:password@`` part removed, values
    of query parameters named like keys (``api_key``, ``key``, ``token``...)
    replaced by ``***``.  Anything that does not parse as a URL is returned
    with :func:`redact_secrets` applied.  None stays None."""
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        if ":" in (parts.hostname or "") and parts.hostname and not host.startswith("["):
            host = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port is not None else "")
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
    """``text`` with every URL passed through :func:`redact_url` and bare
    ``sk-``/``rk-``/``pk-`` keys masked."""
    if not text:
        return text
    text = _URL.sub(lambda m: redact_url(m.group(0)) or "", text)
    return _BARE_KEY.sub(lambda m: f"{m.group(1)}-{MASK}", text)
