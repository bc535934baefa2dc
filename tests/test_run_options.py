"""RunConfig is the one declaration of a run's options: the ``sgieval ask`` options and the ``sgieval.evaluate``
keywords (their names, types, defaults and help) come from its fields, so a new option is one field."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

import sgieval
from sgieval import api
from sgieval.cli import app, options_command
from sgieval.core import InputError, RunConfig, run_options
from sgieval.core.runconfig import Option

runner = CliRunner()


class WithTimeout(RunConfig):
    """RunConfig with one more field, as a developer adds an option."""

    call_timeout_s: float | None = None
    """Seconds each model call may take before it is retried."""


def _members(t: object) -> list[object]:
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(t) for m in _members(a)]
    return [t]


def _accepts(api_type: object, field_type: object) -> bool:
    """Whether every value of ``field_type`` is a value of ``api_type`` (the keyword may be wider)."""
    wide = _members(api_type)
    for t in _members(field_type):
        origin = typing.get_origin(t)
        if t in wide or t is typing.Any:
            continue
        if origin is list and any(typing.get_origin(w) in (list, Sequence) for w in wide):
            continue
        if origin is typing.Literal and any(
            typing.get_origin(w) is typing.Literal and set(typing.get_args(t)) <= set(typing.get_args(w)) for w in wide
        ):
            continue
        return False
    return True


def test_every_field_is_an_ask_option_and_a_typed_evaluate_keyword():
    opts = run_options(RunConfig)
    help_text = runner.invoke(app, ["ask", "--help"], terminal_width=400).output
    params = inspect.signature(sgieval.evaluate).parameters
    typed = typing.get_type_hints(api.RunOptions)
    assert {o.field for o in opts} == set(RunConfig.model_fields) - {
        "sent_params",
        "dropped_params",
        "settings",
        "added_judges",
    }
    for o in opts:
        if o.cli and not o.positional:
            assert f"{o.flag} " in help_text and o.cli_help[:40] in " ".join(help_text.split()), o.field
        if o.api and not o.positional:
            assert params[o.keyword].kind is inspect.Parameter.KEYWORD_ONLY, o.field
            assert o.keyword in typed, f"RunOptions has no keyword {o.keyword!r} for RunConfig.{o.field}"
            assert _accepts(typed[o.keyword], o.annotation), (o.keyword, typed[o.keyword], o.annotation)
            assert params[o.keyword].annotation == typed[o.keyword]
    assert set(typed) == {o.keyword for o in opts if o.api and not o.positional}
    # the spellings that differ from the field names, and the defaults shown
    assert {o.field: (o.flag, o.short, o.keyword) for o in opts if o.flag != "--" + o.field.replace("_", "-")} == {
        "judges": ("--judge", "-j", "judge"),
        "benchmarks": ("--benchmark", "-b", "benchmark"),
        "out_dir": ("--out", "", "out_dir"),
        "use_cache": ("--no-cache", "", "use_cache"),
        "rank_all": ("--all", "", "rank_all"),
        "budget_usd": ("--budget", "", "budget_usd"),
        "prices": ("--price", "", "prices"),
        "timeout_s": ("--timeout", "", "timeout"),
    }
    assert params["yes"].default is True and params["max_concurrency"].default == 16
    assert params["tools"].default == ["search", "pdf", "python"] and params["run_id"].default is None
    assert "run_id" not in {o.field for o in opts if o.cli}


def test_ask_and_evaluate_make_the_same_config(tmp_path, monkeypatch):
    seen: list[dict] = []
    cmd = typer.Typer(rich_markup_mode=None)
    cmd.command()(options_command(RunConfig, seen.append))
    argv = ["q", "-m", "replay:a,replay:b", "-j", "openai:j", "--no-cache", "--tools", "", "-y", "--k", "3"]
    res = runner.invoke(cmd, [*argv, "--out", str(tmp_path), "--corpus", "papers"])
    assert res.exit_code == 0, res.output
    monkeypatch.chdir(tmp_path)
    from_cli = RunConfig.checked(run_id="r", **seen[0])
    from_api, *_ = api.config_from(
        RunConfig,
        "q",
        dict(
            models="replay:a,replay:b", judge=["openai:j"], use_cache=False, tools="", k=3, run_id="r", out_dir=tmp_path
        )
        | {"corpus": Path("papers")},
    )
    assert from_cli.models == ["replay:a", "replay:b"] and from_cli.judges == ["openai:j"] and from_cli.yes
    assert from_cli.use_cache is False and from_cli.tools == [] and from_cli.k == 3
    assert from_cli.corpus == str(tmp_path.resolve() / "papers")
    assert from_cli.model_dump() == from_api.model_dump()


def test_a_new_field_is_a_new_ask_option_and_evaluate_keyword():
    seen: list[dict] = []
    cmd = typer.Typer(rich_markup_mode=None)
    cmd.command()(options_command(WithTimeout, seen.append))
    help_text = " ".join(runner.invoke(cmd, ["--help"], terminal_width=400).output.split())
    assert "--call-timeout-s <float> Seconds each model call may take before it is retried." in help_text
    assert runner.invoke(cmd, ["q", "--call-timeout-s", "2.5"]).exit_code == 0
    assert WithTimeout.checked(run_id="r", **seen[0]).call_timeout_s == 2.5
    assert (
        runner.invoke(cmd, ["q"]).exit_code == 0 and WithTimeout.checked(run_id="r", **seen[1]).call_timeout_s is None
    )

    sig = api.options_signature(WithTimeout, api.aevaluate)
    assert (
        sig.parameters["call_timeout_s"].default is None
        and sig.parameters["call_timeout_s"].kind.name == "KEYWORD_ONLY"
    )
    config, *_ = api.config_from(WithTimeout, "q", {"call_timeout_s": 4.0, "run_id": "r"})
    assert config.call_timeout_s == 4.0
    # the plain RunConfig has no such keyword: one field makes it, nothing else
    assert "call_timeout_s" not in inspect.signature(sgieval.evaluate).parameters
    with pytest.raises(TypeError, match="evaluate\\(\\) got an unexpected keyword argument 'call_timeout_s'"):
        api.config_from(RunConfig, "q", {"call_timeout_s": 4.0})
    with pytest.raises(InputError, match="call_timeout_s"):
        api.config_from(WithTimeout, "q", {"call_timeout_s": "soon", "run_id": "r"})


def test_an_option_without_help_is_refused():
    class NoHelp(RunConfig):
        retries: int = 3

    with pytest.raises(TypeError, match="NoHelp.retries has no help text"):
        run_options(NoHelp)


def test_a_flag_that_switches_an_option_off_says_what_it_does():
    help_text = " ".join(runner.invoke(app, ["ask", "--help"], terminal_width=400).output.split())
    assert "--no-cache Do not use the model-call cache: every call goes to the model and nothing is stored." in (
        help_text
    )
    assert "(off, --no-cache" not in help_text
    use_cache = next(o for o in run_options(RunConfig) if o.field == "use_cache")
    assert use_cache.help == "Use the model-call cache (False: every call goes to the model and nothing is stored)."
    assert "use_cache: Use the model-call cache (False: every call" in " ".join(sgieval.evaluate.__doc__.split())

    # a new field switched off by its flag: the flag's own help, or a TypeError when it has none
    class WithStreaming(RunConfig):
        stream: Annotated[bool, Option(flag="--no-stream", off_help="Wait for whole replies.")] = True
        """Stream model replies."""

    stream = next(o for o in run_options(WithStreaming) if o.field == "stream")
    assert (stream.help, stream.cli_help) == ("Stream model replies.", "Wait for whole replies.")

    class Unexplained(RunConfig):
        stream: Annotated[bool, Option(flag="--no-stream")] = True
        """Stream model replies."""

    with pytest.raises(TypeError, match="Unexplained.stream is switched off by its ask flag, which has no help"):
        run_options(Unexplained)
