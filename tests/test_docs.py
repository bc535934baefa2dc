"""The README and the reference pages in ``docs/`` name only commands and flags the ``sgieval`` command has, the
README stays short and links every page, and every link resolves."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from sgieval.cli import app
from sgieval.tests.conftest import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]

OTHER_TOOLS = {"--slow", "--survivors", "--keep", "--change", "--base", "--most", "--help"}
"""Flags the pages name for other programs (pytest's ``--slow``, ``bench/mutation.py``, ``duplicates``)."""


def _options(command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")} | {"--help"}


def _commands() -> dict[tuple[str, ...], set[str]]:
    """Every command path of ``sgieval`` (("ask",), ("data", "pull"), ...) with its option names."""
    found: dict[tuple[str, ...], set[str]] = {}

    def walk(cmd, path: tuple[str, ...]) -> None:
        found[path] = _options(cmd)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = _commands()
ALL_OPTIONS = set().union(*COMMANDS.values())


def command_lines(text: str) -> list[str]:
    """The ``sgieval ...`` invocations of a Markdown page: lines of bash blocks (continuations joined, comments
    cut) and inline code spans, each from ``sgieval`` on."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0]
            lines += [m.group(0).strip() for m in re.finditer(r"(?<![\w/-])sgieval (?:[^&;|]*)", line)]
    for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
        m = re.search(r"(?<![\w/.-])sgieval [^&;|]*", span)
        if m:
            lines.append(m.group(0).strip())
    return lines


def check_invocation(line: str) -> list[str]:
    """What ``line`` names that ``sgieval`` does not have: an unknown command or an option the command lacks."""
    try:
        words = shlex.split(line.replace("[", " ").replace("]", " "))
    except ValueError:
        words = line.replace("[", " ").replace("]", " ").split()
    path: tuple[str, ...] = ()
    rest = words[1:]
    while rest and (*path, rest[0]) in COMMANDS:
        path, rest = (*path, rest[0]), rest[1:]
    is_group = any(k[: len(path)] == path and len(k) > len(path) for k in COMMANDS)
    if is_group and not (rest and rest[0].startswith("-")):
        where = f"sgieval {' '.join(path)}".strip()
        return [f"{line!r}: `{where}` has no command {rest[0]!r}" if rest else f"{line!r}: `{where}` needs a command"]
    opts = COMMANDS[path]
    bad = [w.split("=", 1)[0] for w in rest if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w)]
    return [f"{line!r}: `sgieval {' '.join(path)}` has no option {b}" for b in bad if b not in opts]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_and_flag_a_page_names_exists(page: Path):
    text = page.read_text(encoding="utf-8")
    lines = command_lines(text)
    problems = [p for line in lines for p in check_invocation(line)]
    flags = set(re.findall(r"`(--[a-z][\w-]*)", text)) - OTHER_TOOLS
    problems += [f"{f}: no sgieval command has this option" for f in sorted(flags - ALL_OPTIONS)]
    assert problems == []


def test_a_wrong_command_or_flag_is_caught():
    assert check_invocation("sgieval ask REQUEST --models a --jduge b") == [
        "'sgieval ask REQUEST --models a --jduge b': `sgieval ask` has no option --jduge"
    ]
    assert check_invocation("sgieval data pul x") == ["'sgieval data pul x': `sgieval data` has no command 'pul'"]
    assert check_invocation("sgieval rnus") == ["'sgieval rnus': `sgieval` has no command 'rnus'"]
    assert check_invocation("sgieval data pull sciaidanbench --force") == []
    assert check_invocation("sgieval --help") == []
    assert check_invocation("sgieval data") == ["'sgieval data': `sgieval data` needs a command"]
    assert command_lines("Run `sgieval view RUN --serve` or\n```bash\nsgieval runs \\\n  --json  # all\n```\n") == [
        "sgieval runs    --json",
        "sgieval view RUN --serve",
    ]


def test_readme_is_short_and_links_every_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    links = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme))
    assert links == {f"docs/{p.name}" for p in DOCS}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # quoted output links into its run
    targets = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert [t for t in targets if t and not (page.parent / t).exists()] == []


def _module_map_names(text: str) -> set[str]:
    """Every module the "Module map" of docs/development.md names, as a path from the repository root."""
    section = text.split("#### Module map", 1)[1].split("\n### ", 1)[0]
    found: set[str] = set()
    for entry in re.split(r"\n- ", section)[1:]:
        head, _, body = entry.partition(":")
        folder = "" if head.strip() == "root" else head.strip().strip("`")
        for part in re.split(r";\s*(?=`[\w/]+/`:)", body):
            sub = re.match(r"\s*`([\w/]+/)`:", part)
            base = folder + (sub.group(1) if sub else "")
            found |= {base + m for m in re.findall(r"`([\w/]+\.py)`", part)}
    return found


def test_the_module_map_names_every_product_module():
    """docs/development.md's module map lists each product module once, and none that does not exist."""
    on_disk = {
        p.relative_to(REPO).as_posix()
        for p in REPO.rglob("*.py")
        if p.relative_to(REPO).parts[0] not in ("tests", "bench", ".venv", "install", "build")
        and not any(part.startswith(".") for part in p.relative_to(REPO).parts)
    }
    named = _module_map_names((REPO / "docs" / "development.md").read_text(encoding="utf-8"))
    assert sorted(on_disk - named) == [] and sorted(named - on_disk) == []
