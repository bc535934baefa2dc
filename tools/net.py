"""Connectivity and fetching: is a host reachable (fast, cached), and GET a URL with a size cap.

:func:`network_status` resolves the host in a helper thread and opens one TCP connection within 0.8 s in total,
cached for 60 s; ``SGIEVAL_NETWORK=offline|online`` overrides the probe; with ``HTTPS_PROXY`` / ``ALL_PROXY`` the proxy
is probed.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core import InputError, OfflineError, ToolError, current_settings

__all__ = ["DDGS_PROBE_HOST", "Fetched", "fetch_url", "network_status"]

DDGS_PROBE_HOST = "duckduckgo.com"
_PROBE_TTL_S = 60.0
_PROBE_TIMEOUT_S = 0.8
_probe_cache: dict[tuple[str, int], tuple[float, bool, str]] = {}
_probe_lock = threading.Lock()


def _proxy_target() -> tuple[str, int] | None:
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        val = os.environ.get(var)
        if val:
            u = urlsplit(val if "://" in val else f"http://{val}")
            if u.hostname:
                return u.hostname, u.port or (443 if u.scheme == "https" else 80)
    return None


def _probe(host: str, port: int, timeout_s: float) -> tuple[bool, str]:
    """Resolve ``host`` (in a daemon thread, so a hanging resolver cannot block us) and connect to it, all within
    ``timeout_s``."""
    t0 = time.monotonic()
    box: dict[str, Any] = {}

    def resolve() -> None:
        try:
            box["addrs"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            box["error"] = e

    th = threading.Thread(target=resolve, daemon=True, name="sgieval-dns-probe")
    th.start()
    th.join(timeout_s)
    if th.is_alive():
        return False, f"resolving {host} took longer than {timeout_s:g} s"
    if "error" in box:
        return False, f"cannot resolve {host} ({box['error']})"
    last = f"no address for {host}"
    for family, stype, proto, _, addr in box.get("addrs", [])[:2]:
        left = timeout_s - (time.monotonic() - t0)
        if left <= 0:
            last = f"cannot connect to {host}:{port} within {timeout_s:g} s"
            break
        try:
            with socket.socket(family, stype, proto) as s:
                s.settimeout(left)
                s.connect(addr)
                return True, f"connected to {host}:{port}"
        except OSError as e:
            last = f"cannot connect to {host}:{port} ({e})"
    return False, last


def network_status(
    host: str = DDGS_PROBE_HOST, port: int = 443, *, refresh: bool = False, timeout_s: float = _PROBE_TIMEOUT_S
) -> tuple[bool, str]:
    """Whether ``host:port`` can be reached, and why not (cached for 60 s per target).

    Args:
        host: the host probed.
        port: its port.
        refresh: probe again instead of using the cached answer.
        timeout_s: the probe's time limit (s).

    Returns:
        ``(online, reason)``, within ``timeout_s``.
    """
    mode = current_settings().network
    if mode == "offline":
        return False, "SGIEVAL_NETWORK=offline"
    if mode == "online":
        return True, "SGIEVAL_NETWORK=online"
    target = _proxy_target() or (host, port)
    now = time.monotonic()
    with _probe_lock:
        hit = _probe_cache.get(target)
        if hit and not refresh and now - hit[0] < _PROBE_TTL_S:
            return hit[1], hit[2]
    ok, why = _probe(target[0], target[1], timeout_s)
    with _probe_lock:
        _probe_cache[target] = (time.monotonic(), ok, why)
    return ok, why


@dataclass
class Fetched:
    """A fetched body: final URL (after redirects), HTTP status, content type, bytes."""

    url: str
    status_code: int
    content_type: str
    content: bytes

    @property
    def text(self) -> str:
        m = re.search(r"charset=([\w-]+)", self.content_type or "")
        try:
            return self.content.decode(m.group(1) if m else "utf-8", errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


def fetch_url(
    url: str, *, timeout_s: float = 15.0, max_bytes: int = 20 * 1024 * 1024, transport: Any = None
) -> Fetched:
    """GET ``url`` (redirects followed, at most ``max_bytes``).  Raises OfflineError fast when the host is unreachable,
    InputError for a non-http URL, ToolError for HTTP errors or bodies over ``max_bytes``. ``transport``: an httpx
    transport (e.g. ``httpx.MockTransport``) to use instead of the network; the connectivity probe is skipped then."""
    import httpx

    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise InputError(f"not an http(s) URL: {url!r}", what="url", fix="pass a URL starting with https://")
    ok, why = (
        (True, "")
        if transport is not None
        else network_status(u.hostname, u.port or (443 if u.scheme == "https" else 80))
    )
    if not ok:
        raise OfflineError(
            f"cannot fetch {url}: offline ({why})",
            what="visit_webpage",
            fix="use web_search with the offline backend 'bm25' over a local corpus (--corpus DIR)",
        )
    try:
        with httpx.Client(
            follow_redirects=True,
            timeout=timeout_s,
            transport=transport,
            headers={"User-Agent": "Mozilla/5.0 (sgieval research tool)"},
        ) as client:
            with client.stream("GET", url) as r:
                buf = bytearray()
                for chunk in r.iter_bytes():
                    buf.extend(chunk)
                    if len(buf) > max_bytes:
                        raise ToolError(
                            f"{url}: body larger than {max_bytes} bytes", what="fetch_url", fix="raise max_bytes"
                        )
                if r.status_code >= 400:
                    raise ToolError(f"{url}: HTTP {r.status_code}", what="fetch_url", fix="check the URL")
                return Fetched(str(r.url), r.status_code, r.headers.get("content-type", ""), bytes(buf))
    except httpx.HTTPError as e:
        raise ToolError(f"{url}: {type(e).__name__}: {e}", what="fetch_url", fix="retry later or check the URL") from e
