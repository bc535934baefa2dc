"""An error of the run names the option as its caller spells it: ``rank_all=True`` through the Python API,
``--all`` on the command line (the option names of :func:`sgieval.core.option_names`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import InputError

MISSPELT = "Which model is most creative in chemsitry?"
UNKNOWN = "Which model writes the best poetry about cooking?"


@pytest.mark.parametrize("request_text", [MISSPELT, UNKNOWN])
def test_the_python_api_names_the_keyword(tmp_path, request_text):
    with pytest.raises(InputError) as ei:
        sgieval.evaluate(request_text, out_dir=tmp_path)
    line = ei.value.one_line()
    assert line.startswith("request: ") and "--" not in line
    assert line.endswith(", or pass rank_all=True to rank every item anyway")


def test_the_command_line_names_the_flag(tmp_path):
    res = CliRunner().invoke(app, ["ask", MISSPELT, "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().endswith(
        'Fix: ask "Which model is most creative in Chemistry?", or pass --all to rank every item anyway'
    )


def test_a_rank_all_run_through_the_api_names_the_keyword_in_its_reason(tmp_path):
    run = sgieval.evaluate(MISSPELT, out_dir=tmp_path, rank_all=True, k=1)
    assert run.state["selection"]["reason"].endswith(". rank_all=True: 'chemsitry' matched nothing and was left out")
