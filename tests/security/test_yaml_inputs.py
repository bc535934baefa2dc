"""YAML cannot blow up and says which line repeats a key: every YAML the product reads (a rubric, a benchmark
definition, a price table) goes through one loader that refuses aliases (billion laughs), repeated keys and
absurd nesting with one line, exit 2, at once.  Nothing is written outside the given folders."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import InputError, Rubric, load_yaml
from sgieval.tests.security.run_folders import one_error_line, snapshot

runner = CliRunner()

# the classic: nine levels of nine aliases each, 9^9 (387 million) strings once expanded
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)
ALIAS_FIX = "Fix: write the value out in full where the alias stands"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(tmp_path / "rubrics"))


def timed(fn):
    t = time.monotonic()
    out = fn()
    return out, time.monotonic() - t


def test_billion_laughs_in_a_shared_rubric_is_one_line_at_once(tmp_path):
    p = tmp_path / "shared" / "rigor.yaml"
    p.parent.mkdir()
    p.write_text("name: rigor\ndescription: x\n" + LAUGHS.replace("a: &a", "criteria: &a", 1))
    before = snapshot(tmp_path)
    res, took = timed(lambda: runner.invoke(app, ["metric", "show", str(p)]))
    assert one_error_line(res) == (
        f"error: {p}: line 4: uses a YAML alias (*name); aliases are not read (a few nested aliases can expand "
        f"to gigabytes). {ALIAS_FIX}"
    )
    assert took < 5  # the loader stops at the first alias (the issue: 16.8 GB after 300 s)
    with pytest.raises(InputError, match="line 4: uses a YAML alias"):
        Rubric.from_yaml(p)
    assert snapshot(tmp_path) == before


def test_billion_laughs_in_a_benchmark_definition_is_one_line_at_once(tmp_path):
    p = tmp_path / "mine.yaml"
    p.write_text(
        "name: mine\nfiles: [qa.jsonl]\n" + LAUGHS.replace("a: &a", "metadata: &a", 1).replace("\nb:", "\nextra:", 1)
    )
    out = tmp_path / "runs"
    before = snapshot(tmp_path)
    res, took = timed(lambda: runner.invoke(app, ["ask", "", "-b", str(p), "--yes", "--out", str(out)]))
    err = one_error_line(res)
    assert err.startswith(f"error: {p}: line 4: uses a YAML alias (*name)") and err.endswith(ALIAS_FIX)
    assert took < 5
    assert snapshot(tmp_path) == before  # no run folder left behind either


def test_a_merge_key_alias_and_a_price_table_alias_are_refused(tmp_path):
    # variant: the `<<: *base` merge key is an alias too; price tables go through the same loader
    from sgieval.models.accounting import load_prices

    p = tmp_path / "prices.yaml"
    p.write_text("base: &b {input: 1.0, output: 2.0}\nmy-model:\n  <<: *b\n")
    with pytest.raises(InputError) as e:
        load_prices(p)
    assert str(e.value).startswith(f"{p}: line 3: uses a YAML alias (*name)")
    deep = tmp_path / "deep.yaml"
    deep.write_text("x: " + "[" * 50_000 + "]" * 50_000 + "\n")
    (err, took) = timed(lambda: pytest.raises(InputError, load_yaml, deep))
    assert str(err.value) == f"{deep}: is nested too deeply to read. Fix: correct the YAML file" and took < 5


def test_a_repeated_key_names_the_file_and_both_lines(tmp_path):
    # a benchmark definition repeating `files:` (the second silently won), a price table repeating a model
    from sgieval.models.accounting import load_prices

    p = tmp_path / "mine.yaml"
    p.write_text("name: mine\nfiles: [a.jsonl]\ntask: short_answer\nfiles: [b.jsonl]\n")
    before = snapshot(tmp_path)
    err = one_error_line(runner.invoke(app, ["ask", "", "-b", str(p), "--yes", "--out", str(tmp_path / "runs")]))
    assert err == f"error: {p}: line 4: repeated key 'files' (first on line 2). Fix: keep one entry per key"
    assert snapshot(tmp_path) == before
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-x: {input: 1.0, output: 2.0}\nother: [1, 1]\ngpt-x: {input: 0.1, output: 0.2}\n")
    with pytest.raises(InputError) as e:
        load_prices(prices)
    assert str(e.value) == f"{prices}: line 3: repeated key 'gpt-x' (first on line 1). Fix: keep one entry per key"
    # variant: nested, in a rubric's weights
    r = tmp_path / "r.yaml"
    r.write_text("name: r\ndescription: d\ncriteria:\n- {name: a, description: x}\nweights:\n  a: 1\n  a: 2\n")
    with pytest.raises(InputError) as e:
        Rubric.from_yaml(r)
    assert str(e.value) == f"{r}: line 7: repeated key 'a' (first on line 6). Fix: keep one entry per key"


def test_plain_yaml_still_loads(tmp_path):
    # anchors without aliases, ordinary definitions: unchanged
    p = tmp_path / "x.yaml"
    p.write_text("a: &keep 1\nb: [1, 2]\nc: {d: e}\n")
    assert load_yaml(p) == {"a": 1, "b": [1, 2], "c": {"d": "e"}}
    assert load_yaml(Path("text"), text="") is None
