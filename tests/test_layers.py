"""The layers of DESIGN.md "Layout" as a checked contract: every module's imports are parsed
with ``ast`` and each import of another sgieval folder must be an allowed direction, and no module imports
another folder's ``_private`` names or modules.  The exceptions that remain are listed here with their reason;
an exception that is no longer needed fails the test too, so the list stays true."""

from __future__ import annotations

import ast
from pathlib import Path

from sgieval.tests.conftest import REPO

FOLDERS = ("core", "benchmarks", "metric_pool", "tools", "models", "agents", "graphs", "reports")

ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "benchmarks": {"core", "metric_pool"},
    "metric_pool": {"core", "tools", "models"},
    "tools": {"core"},
    "models": {"core"},
    # "everything above"; reports too: the reporting agent hands its statistics to reports/ (DESIGN.md picture:
    # agents/reporting.py -> reports/)
    "agents": {"core", "benchmarks", "metric_pool", "tools", "models", "reports"},
    "graphs": {"agents", "core"},
    "reports": {"core"},
    "cli": {"graphs", "reports", "core"},
}
"""Folder -> the sgieval folders its modules may import (DESIGN.md "Layout")."""

# (importing module, imported folder): why this import stays.  Keep short; each one is a debt.
EXCEPTIONS: dict[tuple[str, str], str] = {
    (
        "cli/commands.py",
        "benchmarks",
    ): "`sgieval catalog` / `data` list and pull benchmark data; `ask` checks for stored "
    "SciAidanBench answers before a run",
    ("cli/metric.py", "metric_pool"): "`sgieval metric show/test` work on the metric pool without a run",
    ("cli/metric.py", "models"): "`sgieval metric test/define --judge/--agent-model` resolve model strings",
    ("cli/metric.py", "tools"): "`sgieval metric test --tools` gives the judge its tool pool",
    ("cli/commands.py", "agents"): "`ask` lists each metric's needs at the confirmation (agents.requirements)",
    ("cli/metric.py", "agents"): "`sgieval metric define` drafts a rubric with the customisation agent",
    ("cli/labels.py", "metric_pool"): "`sgieval labels import` / `label` validate and sample labels of a finished run",
}


# (importing module, imported module): a cross-folder import that names a module, not the folder, and why
NOT_THROUGH_INIT: dict[tuple[str, str], str] = {
    ("agents/executors.py", "core.retry"): "core.retry.retry shares its module's name (the folder's attribute "
    "`retry` is the module once it is imported)",
    ("agents/reporting.py", "metric_pool.reliability"): "metric_pool.reliability.reliability shares its module's name",
    ("agents/reporting.py", "metric_pool.recheck"): "metric_pool.recheck.recheck shares its module's name",
    ("tools/search.py", "core.retry"): "core.retry.retry shares its module's name",
}

THROUGH_INIT = ("agents", "benchmarks", "cli", "core", "graphs", "metric_pool", "models", "reports", "tools", "root")
"""The importing folders whose cross-folder imports go through the imported folder's ``__init__``."""


def _folder(rel: str) -> str:
    first = rel.split("/", 1)[0]
    return first if "/" in rel else first.removesuffix(".py")


def _modules() -> list[Path]:
    out = []
    for p in sorted(REPO.rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        if rel.split("/", 1)[0] in ("tests", "bench", ".venv", "install", "build") or "/." in "/" + rel:
            continue
        out.append(p)
    return out


def _imports(rel: str, source: str) -> list[tuple[str, list[str], int]]:
    """(dotted module within sgieval, imported names, line) for every relative or ``sgieval.`` import of the
    module at ``rel`` (path relative to the package root) with text ``source``."""
    pkg = rel.split("/")[:-1]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(pkg):
                    continue
                base = pkg[: len(pkg) - (node.level - 1)]
                mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and (node.module == "sgieval" or node.module.startswith("sgieval.")):
                mod = node.module.removeprefix("sgieval").lstrip(".")
            else:
                continue
            out.append((mod, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            out += [
                (a.name.removeprefix("sgieval."), [], node.lineno) for a in node.names if a.name.startswith("sgieval.")
            ]
    return out


def _check(rel: str, source: str) -> tuple[list[str], set[tuple[str, str]]]:
    """Layer violations of one module, and the listed exceptions it uses."""
    bad: list[str] = []
    used: set[tuple[str, str]] = set()
    mine = _folder(rel)
    if mine not in ALLOWED:
        return bad, used  # the root package (__init__.py, api.py) is the public API: it may use every folder
    for mod, names, line in _imports(rel, source):
        parts = [p for p in mod.split(".") if p]
        target = parts[0] if parts else ""
        if target not in FOLDERS or target == mine:
            continue
        private = [p for p in parts[1:] if p.startswith("_") and not p.startswith("__")]
        private += [n for n in names if n.startswith("_") and not n.startswith("__")]
        if private:
            bad.append(f"{rel}:{line} imports private {private} of {mod}")
        if target not in ALLOWED[mine]:
            if (rel, target) in EXCEPTIONS:
                used.add((rel, target))
            else:
                bad.append(f"{rel}:{line} ({mine}) imports {mod} ({target} is not allowed for {mine})")
    return bad, used


def _violations() -> tuple[list[str], set[tuple[str, str]]]:
    bad: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in _modules():
        b, u = _check(path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8"))
        bad += b
        used |= u
    return bad, used


def test_imports_follow_the_design_layers():
    bad, used = _violations()
    assert bad == []
    assert sorted(set(EXCEPTIONS) - used) == []  # every listed exception is still needed


def test_the_checker_sees_a_violation():
    """The parser finds a relative import of a forbidden folder and a private name (guards the checker itself)."""
    bad, _ = _check(
        "reports/probe.py",
        "from ..metric_pool.aggregate import summarize\n"
        "from ..core.records import _Record\n"
        "from .charts import heatmap\n"
        "import sgieval.models._secret\n",
    )
    assert bad == [
        "reports/probe.py:1 (reports) imports metric_pool.aggregate (metric_pool is not allowed for reports)",
        "reports/probe.py:2 imports private ['_Record'] of core.records",
        "reports/probe.py:4 imports private ['_secret'] of models._secret",
        "reports/probe.py:4 (reports) imports models._secret (models is not allowed for reports)",
    ]


def _not_through_init(rel: str, source: str) -> tuple[list[str], set[tuple[str, str]]]:
    """Cross-folder imports of one module that name a module of another folder (``from ..models.calls import x``)
    instead of the folder (``from ..models import x``), or a name that folder's ``__all__`` does not list; and
    the listed exceptions it uses."""
    import importlib

    bad: list[str] = []
    used: set[tuple[str, str]] = set()
    mine = _folder(rel) if "/" in rel else "root"
    for mod, names, line in _imports(rel, source):
        parts = [p for p in mod.split(".") if p]
        if not parts or parts[0] not in FOLDERS or parts[0] == mine:
            continue
        if len(parts) > 1:
            if (rel, mod) in NOT_THROUGH_INIT:
                used.add((rel, mod))
            else:
                bad.append(f"{rel}:{line} imports {mod}, not {parts[0]}")
            continue
        public = set(importlib.import_module(f"sgieval.{parts[0]}").__all__)
        unlisted = [n for n in names if n not in public]
        if unlisted:
            bad.append(f"{rel}:{line} imports {unlisted} of {parts[0]}, which its __all__ does not list")
    return bad, used


def test_cross_folder_imports_go_through_the_folder_init():
    """DESIGN.md "Adding things": each folder's ``__init__`` lists what other folders may use, and they import it
    from there (the ``__init__`` loads it lazily where importing it is slow)."""
    bad: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in _modules():
        rel = path.relative_to(REPO).as_posix()
        if (_folder(rel) if "/" in rel else "root") not in THROUGH_INIT:
            continue
        b, u = _not_through_init(rel, path.read_text(encoding="utf-8"))
        bad += b
        used |= u
    assert bad == []
    assert sorted(set(NOT_THROUGH_INIT) - used) == []  # every listed exception is still needed


def test_the_through_init_checker_sees_a_module_import_and_an_unlisted_name():
    bad, _ = _not_through_init(
        "agents/probe.py",
        "from ..models.calls import message_text\nfrom ..models import NamedModel, _hidden_thing\n"
        "from .run import RunContext\nfrom ..core import Item\n",
    )
    assert bad == [
        "agents/probe.py:1 imports models.calls, not models",
        "agents/probe.py:2 imports ['_hidden_thing'] of models, which its __all__ does not list",
    ]


def test_every_relative_import_names_a_module_that_exists():
    """A relative import of a module that is not there fails only when its line runs (a function-level import):
    every one is checked here."""
    bad = []
    for path in _modules():
        rel = path.relative_to(REPO).as_posix()
        for mod, _names, line in _imports(rel, path.read_text(encoding="utf-8")):
            where = REPO.joinpath(*[p for p in mod.split(".") if p])
            if mod and not (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()):
                bad.append(f"{rel}:{line} imports {mod}, which does not exist")
    assert bad == []


def test_every_folder_lists_its_public_names():
    """Each folder's ``__init__.py`` says what other folders may use (``__all__``), and every listed name exists."""
    import importlib

    for folder in FOLDERS:
        mod = importlib.import_module(f"sgieval.{folder}")
        names = getattr(mod, "__all__", None)
        assert names, f"sgieval/{folder}/__init__.py has no __all__"
        missing = [n for n in names if not hasattr(mod, n)]
        assert missing == [], f"{folder}.__all__ lists missing names {missing}"
