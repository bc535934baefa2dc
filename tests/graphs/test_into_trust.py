"""``sgieval ask ... --into RUN`` and the settings of RUN's config.json, through the CLI against the local mock
server: a run started on this machine asks no confirmation (its settings are the user's own, and what the --into
adds is named on its command line), and the grown run resumes here without one either; a received run folder's
settings are shown and confirmed first, and a refusal's fix names what ``ask`` accepts (no ``--trust-config``,
which ``ask`` does not have).

The run is the one of :mod:`tests.graphs.test_into_judge` (made by ``sgieval.evaluate`` on this machine).
"""

from __future__ import annotations

from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.tests.graphs.test_into_judge import _rows, served  # noqa: F401 - the fixture

runner = CliRunner()
PROMPT = "Use them with your credentials?"


def test_an_into_of_a_run_started_here_asks_no_confirmation(served):  # noqa: F811
    run_dir, mock, replies, into = served
    res = runner.invoke(app, [*into, "--judge", "openai:judge2", "--dry-run"], input="")
    assert res.exit_code == 0, res.output
    assert PROMPT not in res.output
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="")
    assert res.exit_code == 0, res.output
    assert PROMPT not in res.output and replies.since(16) == {"judge2": 12}
    # the grown run (its config.json now names the added judge) is the user's own too
    res = runner.invoke(app, ["resume", str(run_dir), "--yes"], input="")
    assert res.exit_code == 0, res.output
    assert PROMPT not in res.output and replies.since(16) == {"judge2": 12}


def test_a_received_run_is_confirmed_first_and_the_fix_names_what_ask_accepts(served, tmp_path, monkeypatch):  # noqa: F811
    run_dir, mock, replies, into = served
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-machine"))  # nothing of this run is trusted here
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="", terminal_width=400)
    assert res.exit_code == 2
    assert PROMPT in res.output
    shown = (
        "tools = ['search', 'pdf', 'python']; models = ['openai:model-a', 'openai:model-b']; "
        "judges = ['openai:judge']; added_judges = ['openai:judge2']"
    )
    assert (
        f"error: {run_dir / 'config.json'}: not confirmed: {shown}. Fix: pass them again (--tools LIST) or answer y "
        "at the prompt after checking them"
    ) in " ".join(res.output.split())
    assert "--trust-config" not in res.output
    assert replies.since(16) == {} and [r["kind"] for r in _rows(run_dir / "invocations.jsonl")] == ["ask"]
    # confirmed at the prompt: the judge is added
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 0, res.output
    assert replies.since(16) == {"judge2": 12}
