"""NaN/Infinity, JSON nested 100,000 deep and invalid UTF-8 in benchmark and replay files get
one line naming the file (and line) and exit 2, no traceback."""

from __future__ import annotations


import pytest
from typer.testing import CliRunner

from sgieval.cli import app

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


def one_error_line(res, code: int = 2) -> str:
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize(
    "line,why",
    [
        ('{"id": "q1", "prompt": "p", "reference": NaN}', "NaN is not a JSON number"),
        ('{"id": "q1", "prompt": "p", "reference": [1, -Infinity]}', "-Infinity is not a JSON number"),
        ('{"id": "q1", "prompt": "p", "reference": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ],
)
def test_jsonl_benchmark_non_finite_and_deep_lines_name_the_line(tmp_path, line, why):
    bench = tmp_path / "qa.jsonl"
    bench.write_text('{"id": "q0", "prompt": "p", "reference": "x"}\n' + line + "\n")
    err = one_error_line(
        runner.invoke(
            app,
            ["ask", "", "-b", str(bench), "-m", "replay:x", "--yes", "--tools", "", "--out", str(tmp_path / "runs")],
        )
    )
    assert err.startswith(f"error: {bench} line 2: is not valid JSON: {why}")
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("raw", [b'{"item_id": "jsonl:qa/q0", "text": "caf\xe9"}\n', b"\xff\xfe{}\n"])
def test_invalid_utf8_in_replay_and_benchmark_files(tmp_path, raw):
    bench = tmp_path / "qa.jsonl"
    bench.write_text('{"id": "q0", "prompt": "p", "reference": "x"}\n')
    replay = tmp_path / "answers.jsonl"
    replay.write_bytes(raw)
    err = one_error_line(
        runner.invoke(
            app,
            [
                "ask",
                "",
                "-b",
                str(bench),
                "-m",
                f"replay:{replay}",
                "--yes",
                "--tools",
                "",
                "--out",
                str(tmp_path / "runs"),
            ],
        )
    )
    assert err.startswith(f"error: {replay}: cannot read file: 'utf-8' codec can't decode byte")
    bad_bench = tmp_path / "bad.jsonl"
    bad_bench.write_bytes(b'{"id": "q0", "prompt": "\xc3\x28", "reference": "x"}\n')
    err = one_error_line(
        runner.invoke(
            app,
            [
                "ask",
                "",
                "-b",
                str(bad_bench),
                "-m",
                f"replay:{replay}",
                "--yes",
                "--tools",
                "",
                "--out",
                str(tmp_path / "runs"),
            ],
        )
    )
    assert err.startswith(f"error: {bad_bench}: cannot read file:")
