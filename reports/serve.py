"""The HTML viewer served on 127.0.0.1 for one session (``sgieval view --serve``): :class:`ViewerServer`."""

from __future__ import annotations

import http.server
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from .render import js_assign, jsonable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""Host names the served viewer answers to (with its port): no DNS rebinding."""

SERVED_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""Headers of every reply: no framing, no use from another origin, no sniffing, no ``Referer`` carrying the path."""

TOKEN_HEADER = "X-Sgieval-Token"
"""Header carrying the session token on a POST (another origin needs a CORS preflight, never granted)."""

MAX_POST_BYTES = 256 * 1024
"""Largest POST body the served viewer reads."""

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".png": "image/png"}
_TEXT = "text/plain; charset=utf-8"
_NOT_FOUND = (404, _TEXT, b"not found\n")
Reply = tuple[int, str, bytes]


def viewer_files(folder: str | Path) -> dict[str, Path]:
    """The files of a viewer folder that :class:`ViewerServer` serves.

    Args:
        folder: the viewer folder.

    Returns:
        ``index.html``, ``data.js``, ``text.js`` and ``figures/<name>.png`` -- regular files only, never a symbolic
        link ({path relative to the session root: file}).
    """
    folder = Path(folder)
    names = ["index.html", "data.js", "text.js"]
    figs = folder / "figures"
    if figs.is_dir() and not figs.is_symlink():
        names += [f"figures/{p.name}" for p in sorted(figs.iterdir()) if p.suffix == ".png"]
    return {n: folder / n for n in names if not (folder / n).is_symlink() and (folder / n).is_file()}


class LabelReceiver(Protocol):
    """Labels a run from its page (``sgieval.cli.labels``): ``session()`` gives the default ``labeller`` and saved
    ``labels``; ``save(body)`` returns 200 ``{"saved": [labels]}``, or 400/409 ``{"error": reason}`` saving nothing."""

    def session(self) -> dict[str, Any]: ...

    def save(self, body: Any) -> tuple[int, dict[str, Any]]: ...


class _Handler(http.server.BaseHTTPRequestHandler):
    """Hands each request to the :class:`ViewerServer` of its server."""

    server_version = "sgieval-viewer"
    sys_version = ""

    def log_message(self, *args: object) -> None:  # no access log on the terminal
        pass

    def do_GET(self) -> None:
        self._send(*self.server.viewer.respond(self.path, self.headers))  # type: ignore[attr-defined]

    def do_HEAD(self) -> None:
        status, ctype, data = self.server.viewer.respond(self.path, self.headers)  # type: ignore[attr-defined]
        self._send(status, ctype, data, body=False)

    def do_POST(self) -> None:
        viewer = self.server.viewer  # type: ignore[attr-defined]
        status, ctype, data = viewer.check_post(self.path, self.headers)
        if status == 0:  # checks passed: read the body and hand it to the receiver
            status, ctype, data = viewer.receive(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self._send(status, ctype, data)

    def do_OPTIONS(self) -> None:  # a CORS preflight: never granted
        self._send(403, _TEXT, b"refused: no cross-origin requests\n")

    def do_PUT(self) -> None:
        self._send(405, _TEXT, b"method not allowed\n")

    do_DELETE = do_PATCH = do_PUT

    def _send(self, status: int, ctype: str, data: bytes, body: bool = True) -> None:
        self.send_response(status)
        for k, v in {**SERVED_HEADERS, "Content-Type": ctype, "Content-Length": str(len(data))}.items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(data)


class ViewerServer:
    """The viewer folder ``folder`` served on ``http://127.0.0.1:<port>/<token>/`` (``port`` 0: any free port).

    Only this session's page can read the run: files are served only under a random ``/<token>/`` (192 bits); the
    ``Host`` must be one of :data:`LOOPBACK_NAMES` with this port (else 421, against DNS rebinding); a request a
    browser marks as from another site or origin is refused (403); every reply carries :data:`SERVED_HEADERS`.

    With ``labels``, ``GET /<token>/session.js`` gives ``window.SGV_SESSION`` and ``POST /<token>/labels`` hands the
    JSON body to ``labels.save``; a POST is refused before its body is read without the token in :data:`TOKEN_HEADER`
    (403), ``Content-Type: application/json`` (415) or at most :data:`MAX_POST_BYTES` (413).  Without ``labels`` there
    is no ``session.js`` (404) and every POST is 405.  Raises OSError when the port cannot be bound."""

    def __init__(
        self, folder: str | Path, port: int = 0, *, token: str | None = None, labels: LabelReceiver | None = None
    ):
        self.folder = Path(folder)
        self.token = token or secrets.token_urlsafe(24)
        self.files = viewer_files(self.folder)
        self.labels = labels
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.viewer = self  # type: ignore[attr-defined]
        self.port = int(self.httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address, ``http://127.0.0.1:<port>/<token>/index.html``."""
        return f"http://127.0.0.1:{self.port}/{self.token}/index.html"

    def _route(self, path: str, headers: Any) -> str | Reply:
        """The part of ``path`` below ``/<token>/``, or a refusal (421 foreign Host, 403 cross-site, 404 other path)."""
        host = (headers.get("Host") or "").strip().lower()
        if host not in {f"{h}:{self.port}" for h in LOOPBACK_NAMES}:
            return 421, _TEXT, b"this server answers only to 127.0.0.1, localhost and [::1] with its port\n"
        site = (headers.get("Sec-Fetch-Site") or "").strip().lower()
        origin = (headers.get("Origin") or "").strip().lower()
        if (site and site not in ("same-origin", "none")) or (origin and origin != f"http://{host}"):
            return 403, _TEXT, b"refused: a request from another site or origin\n"
        rel = unquote(urlsplit(path).path)
        prefix = f"/{self.token}/"
        return rel[len(prefix) :] if rel.startswith(prefix) else _NOT_FOUND

    def respond(self, path: str, headers: Any) -> Reply:
        """(HTTP status, content type, body) for a GET of ``path``.

        Args:
            path: the request path.
            headers: the request headers (case-insensitive ``get``).

        Returns:
            The response.
        """
        rel = self._route(path, headers)
        if not isinstance(rel, str):
            return rel
        rel = rel or "index.html"
        if rel == "session.js" and self.labels is not None:
            session = {**self.labels.session(), "post": "labels", "header": TOKEN_HEADER}
            return 200, _TYPES[".js"], js_assign("SGV_SESSION", jsonable(session)).encode("utf-8")
        p = self.files.get(rel)
        if p is None:
            return _NOT_FOUND
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as f:
                data = f.read()
        except OSError:
            return _NOT_FOUND
        return 200, _TYPES.get(p.suffix, "application/octet-stream"), data

    def check_post(self, path: str, headers: Any) -> Reply:
        """The refusal of a POST of ``path``, or ``(0, "", b"")`` when its body may be handed to :meth:`receive`.

        Args:
            path: the request path.
            headers: the request headers.

        Returns:
            The refusal, or ``(0, "", b"")``.
        """
        rel = self._route(path, headers)
        if not isinstance(rel, str):
            return rel
        if self.labels is None or rel != "labels":
            return 405, _TEXT, b"method not allowed\n"
        given = (headers.get(TOKEN_HEADER) or "").strip()
        if not secrets.compare_digest(given.encode("utf-8", "replace"), self.token.encode("ascii")):
            return 403, _TEXT, f"refused: a POST must carry the session token in the {TOKEN_HEADER} header\n".encode()
        if (headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            return 415, _TEXT, b"refused: the body must be application/json\n"
        try:
            n = int(headers.get("Content-Length") or "")
        except ValueError:
            return 411, _TEXT, b"refused: a POST needs a Content-Length\n"
        if not 0 < n <= MAX_POST_BYTES:
            return 413, _TEXT, f"refused: a body of 1 to {MAX_POST_BYTES} bytes\n".encode()
        return 0, "", b""

    def receive(self, data: bytes) -> Reply:
        """(HTTP status, content type, body) for a checked POST body: ``labels.save``'s JSON reply (400 for no JSON).

        Args:
            data: the request body.

        Returns:
            The response.
        """
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            status, reply = 400, {"error": f"the body is not JSON ({e})"}
        else:
            assert self.labels is not None
            status, reply = self.labels.save(body)
        return status, "application/json; charset=utf-8", json.dumps(jsonable(reply), ensure_ascii=False).encode()

    def serve_forever(self) -> None:
        """Serve until :meth:`close` (or KeyboardInterrupt)."""
        self.httpd.serve_forever()

    def start(self) -> "ViewerServer":
        """Serve from a daemon thread.

        Returns:
            This server.
        """
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="sgieval-viewer")
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
        self.httpd.server_close()
