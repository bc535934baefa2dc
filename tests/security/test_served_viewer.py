"""`sgieval view RUN --serve` talks only to its own page.

The probe that found the leak: a page on a second 127.0.0.1 port included ``data.js`` and ``text.js`` as
scripts and read the run, and any ``Host`` header was served (DNS rebinding).  Here the real CLI serves a
real run folder; requests come over real sockets (httpx, and headless Chromium for the cross-origin include).
"""

from __future__ import annotations


import httpx
import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.tests.browser import CHROMIUM, CHROMIUM_ARGS, playwright_api
from sgieval.tests.served import SecondOrigin, serve_viewer

CHEM = "Which model is the most creative in chemistry?"
runner = CliRunner()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base URL of the session, its page URL, the port) of `sgieval view RUN --serve` on a small real run."""
    out = tmp_path_factory.mktemp("served-runs")
    res = runner.invoke(app, ["ask", CHEM, "--k", "3", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run_dir,) = [p.parent for p in out.glob("*/config.json")]
    with serve_viewer(str(run_dir), "--port", "0") as served:
        assert len(served["token"]) >= 32  # 24 random bytes, URL-safe base64
        yield served


def test_own_page_gets_the_run_with_protective_headers(served):
    r = httpx.get(served["page"], timeout=5)
    assert r.status_code == 200 and f"<title>sgieval: {CHEM}</title>" in r.text
    js = httpx.get(served["base"] + "data.js", timeout=5, headers={"Sec-Fetch-Site": "same-origin"})
    assert js.status_code == 200 and js.text.startswith("window.SGV_DATA = ")
    assert httpx.get(served["base"] + "figures/ranking.png", timeout=5).content[:4] == b"\x89PNG"
    for h in (r.headers, js.headers):
        assert h["x-frame-options"] == "DENY"
        assert h["content-security-policy"] == "frame-ancestors 'none'"
        assert h["cross-origin-resource-policy"] == "same-origin"
        assert h["x-content-type-options"] == "nosniff"
    assert js.headers["content-type"].startswith("text/javascript")
    # localhost and [::1] (with the port) are this server too
    for host in (f"localhost:{served['port']}", f"[::1]:{served['port']}"):
        assert httpx.get(served["base"] + "data.js", headers={"Host": host}, timeout=5).status_code == 200


@pytest.mark.parametrize("name", ["data.js", "text.js", "index.html", "figures/ranking.png"])
def test_the_old_fixed_paths_are_not_served(served, name):
    """What the probe's page included (``/data.js``, ``/text.js``): without the session's path, nothing."""
    r = httpx.get(f"http://127.0.0.1:{served['port']}/{name}", timeout=5)
    assert r.status_code == 404 and "SGV" not in r.text
    wrong = httpx.get(f"http://127.0.0.1:{served['port']}/{'A' * len(served['token'])}/{name}", timeout=5)
    assert wrong.status_code == 404


@pytest.mark.parametrize(
    "host", ["attacker.example:{port}", "127.0.0.1.nip.io:{port}", "127.0.0.1:1", "localhost", "evil.localhost:{port}"]
)
def test_a_foreign_host_header_is_refused(served, host):
    """DNS rebinding: a name that resolves to 127.0.0.1 sends its own Host header; refused even with the token."""
    r = httpx.get(served["base"] + "data.js", headers={"Host": host.format(port=served["port"])}, timeout=5)
    assert r.status_code == 421 and "SGV_DATA" not in r.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "script", "Referer": "http://127.0.0.1:9/attack.html"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "script"},
        {"Origin": "http://127.0.0.1:9"},
    ],
)
def test_a_request_from_another_origin_is_refused(served, headers):
    """Even a page that learnt the session path gets nothing when its browser says where it comes from."""
    r = httpx.get(served["base"] + "text.js", headers=headers, timeout=5)
    assert r.status_code == 403 and "SGV_TEXT" not in r.text


@pytest.mark.parametrize("knows_token", [False, True])
@pytest.mark.browser
def test_a_second_origin_page_cannot_read_the_run_in_a_browser(served, tmp_path, knows_token):
    """The probe's attack in Chromium: a page on another 127.0.0.1 port includes data.js and text.js as
    scripts.  Without the session path it cannot name them; with it (a leaked URL) the server refuses the
    cross-origin include and the browser would block it (Cross-Origin-Resource-Policy).  The viewer's own
    page, served by the same server, loads both."""
    sync_api = playwright_api()
    prefix = served["base"] if knows_token else f"http://127.0.0.1:{served['port']}/"
    attack = SecondOrigin(
        tmp_path,
        "<!doctype html><html><body>"
        f'<script src="{prefix}data.js"></script><script src="{prefix}text.js"></script>'
        "<script>document.title = [typeof window.SGV_DATA, typeof window.SGV_TEXT].join(',');</script>"
        "</body></html>",
    )
    pw = sync_api.sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{attack.port}/attack.html")
        page.wait_for_load_state("load")
        assert page.title() == "undefined,undefined"
        own = browser.new_page()
        own.goto(served["page"])
        own.wait_for_function("window.SGV_DATA !== undefined && window.SGV_TEXT !== undefined", timeout=20_000)
        assert own.evaluate("window.SGV_DATA.run.request") == CHEM
        browser.close()
    finally:
        pw.stop()
        attack.close()
