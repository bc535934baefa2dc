"""Served-viewer helpers shared by the tests that start ``sgieval view --serve`` (the real CLI in a subprocess) and
the page of a second 127.0.0.1 origin that tries to read it."""

from __future__ import annotations

import contextlib
import http.server
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

SERVING = re.compile(r"at (http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]+)/index\.html) \(Ctrl-C to stop\)")
"""The CLI's "serving ... at <page> (Ctrl-C to stop)" line: page, port, token."""


def free_port() -> int:
    """A port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_viewer(*args: str, timeout: float = 60) -> Iterator[dict[str, Any]]:
    """Run ``sgieval view <args> --serve --no-open`` until the block ends; yields ``{"line", "page", "port",
    "token", "base"}`` from its "serving" line (``base``: the session's folder URL)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sgieval.cli", "view", *args, "--serve", "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = ""
        deadline = time.monotonic() + timeout
        while "serving" not in line:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()  # type: ignore[union-attr]
            line = proc.stdout.readline()  # type: ignore[union-attr]
        m = SERVING.search(line)
        assert m, line
        port, token = int(m.group(2)), m.group(3)
        yield {
            "line": line,
            "page": m.group(1),
            "port": port,
            "token": token,
            "base": f"http://127.0.0.1:{port}/{token}/",
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class SecondOrigin:
    """A page (``attack.html`` in ``folder``) served on a second 127.0.0.1 port, to show what another origin can do."""

    def __init__(self, folder: Path, html: str):
        (folder / "attack.html").write_text(html, encoding="utf-8")

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

        def handler(*a: Any, **k: Any) -> Quiet:
            return Quiet(*a, directory=str(folder), **k)

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
