"""Shared helpers of the security tests: a user's environment, a JSONL benchmark of sums, `sgieval ask` against an
OpenAI-compatible server, a finished run to copy, the tree outside a run folder, one error line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from sgieval.cli import app

CHEM = "Which model is the most creative in chemistry?"


def user_env(monkeypatch, tmp_path: Path, api_key: str | None = None) -> None:
    """A user whose state and cache folders are under ``tmp_path``; with ``api_key``, that OpenAI key and no
    ``OPENAI_BASE_URL``."""
    if api_key is not None:
        monkeypatch.setenv("OPENAI_API_KEY", api_key)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


def sums_bench(path: Path, n: int = 4) -> Path:
    """``path``, written as a JSONL benchmark of ``n`` items: id ``q{i}``, "What is i + i?", reference ``2i``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"What is {i} + {i}?", "reference": str(2 * i)}) + "\n"
            for i in range(n)
        )
    )
    return path


def ask_mock(url: str, bench: Path, out: Path, *extra: str, model: str = "openai:gpt-4o-mini"):
    """`sgieval ask` (no request, no tools, confirmed) of ``model`` on ``bench`` against the OpenAI-compatible
    server at ``url``, runs kept under ``out``, ``extra`` options added; the CliRunner result."""
    args = ["ask", "", "-b", str(bench), "-m", model, "--base-url", url, "--tools", "", "--yes", "--out", str(out)]
    return CliRunner().invoke(app, [*args, *extra])


def snapshot(root: Path, skip: Path | None = None) -> dict[str, tuple[int, int, int, bytes]]:
    """(mode, size, mtime, first bytes) of every path under ``root`` but the run folder ``skip`` and the user's
    state/cache folders (a folder's own size and mtime are left out: what changes in it shows as its entries)."""
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root).parts
        if rel and rel[0] in ("state", "cache"):
            continue
        if skip is not None and (p == skip or skip in p.parents):
            continue
        st = p.lstat()
        if p.is_dir() and not p.is_symlink():
            out[str(p)] = (st.st_mode, 0, 0, b"")
        else:
            head = p.read_bytes()[:64] if p.is_file() and not p.is_symlink() else b""
            out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, head)
    return out


def one_error_line(res, code: int = 2) -> str:
    """The one ``error:`` line of a CLI result that exited with ``code`` (no traceback)."""
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    return lines[0]


def copy_run(run: Path, dest_parent: Path) -> Path:
    """A copy of the run folder ``run`` in ``dest_parent`` (same name)."""
    dest = dest_parent / run.name
    shutil.copytree(run, dest, symlinks=True)
    return dest


def jsonl_lines(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file, split on ``\\n`` only."""
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def viewer_data(run: Path) -> dict:
    """The viewer's ``data.js`` object (``window.SGV_DATA = {...};``)."""
    text = (run / "viewer" / "data.js").read_text(encoding="utf-8")
    return json.loads(text.split("=", 1)[1].strip().removesuffix(";"))


def viewer_text(run: Path) -> dict:
    """The viewer's ``text.js`` object."""
    text = (run / "viewer" / "text.js").read_text(encoding="utf-8")
    return json.loads(text.split("=", 1)[1].strip().removesuffix(";"))
