"""Upstream data layouts ``--data-dir`` may point at besides ``<root>/<benchmark>/``: a SciAidanBench or AidanBench
clone (read through a view in the user cache, rebuilt when the clone changes; question lists read with :mod:`ast`, never
run) or an SGI-Bench HuggingFace snapshot."""

from __future__ import annotations

import ast
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from ..core import DataNotFoundError
from .sciaidanbench import is_pseudo, load_stored_answers, questions_from_results
from .sgi import task_of_name

SCIAIDAN_CLONE = "SciAidanBench clone (results/per_model/model_*.json, benchmark/sciaidanbench_questions*.py)"
AIDAN_CLONE = "AidanBench clone (benchmark/question_list.py, results/*.json)"
SGI_SNAPSHOT = "SGI-Bench hub snapshot (SGI-<Task>/.../<split>-*.parquet)"
SGIEVAL_LAYOUT = (
    "sgieval layout (<dir>/<benchmark>/: sciaidanbench/questions.json, sgi-bench/*.parquet|jsonl, sfbench/*.jsonl)"
)
LAYOUTS = (SGIEVAL_LAYOUT, SCIAIDAN_CLONE, AIDAN_CLONE, SGI_SNAPSHOT)  # Every layout a data folder may have.


def literal_strings(path: Path) -> dict[str, Any]:
    """{name: value} of the module-level assignments of ``path`` whose value is a literal list of strings or a nested
    dict of such lists (:func:`ast.literal_eval`; nothing is run). DataNotFoundError when it is not valid Python."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, OSError) as e:
        raise DataNotFoundError(
            f"cannot read the question list as Python source ({e})",
            what=str(path),
            fix="restore the file from the upstream repository",
        ) from e
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            val = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if _string_tree(val):
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = val
    return out


def _string_tree(v: Any) -> bool:
    if isinstance(v, list):
        return bool(v) and all(isinstance(x, str) for x in v)
    if isinstance(v, dict):
        return bool(v) and all(isinstance(k, str) and _string_tree(x) for k, x in v.items())
    return False


def question_groups(files: list[Path]) -> list[tuple[str, str | None, list[str]]]:
    """(domain, subdomain or None, questions) of the first ``{domain: [q...]}`` or ``{domain: {subdomain: [q...]}}``
    dict in the question-list files."""
    for f in files:
        for val in literal_strings(f).values():
            if not isinstance(val, dict):
                continue
            groups: list[tuple[str, str | None, list[str]]] = []
            for domain, v in val.items():
                if isinstance(v, list):
                    groups.append((domain, None, v))
                else:
                    groups += [(domain, sub, qs) for sub, qs in v.items() if isinstance(qs, list)]
            if groups:
                return groups
    return []


def _clone_root(folder: Path) -> Path | None:
    """The SciAidanBench clone holding ``folder`` (the clone, its ``results/`` or ``results/per_model/``)."""
    for cand in (folder, folder.parent, folder.parent.parent):
        if (cand / "results" / "per_model").is_dir() and any((cand / "results" / "per_model").glob("model_*.json")):
            return cand
    return None


@dataclass
class CloneView:
    """The sgieval-layout view of an upstream clone: ``folder`` (what the loaders read), ``source`` (the clone),
    ``layout``, real ``models``, ``pseudo_models`` (ensembles/routers: {name: file}) and ``notes`` (unreadable
    files)."""

    folder: Path
    source: Path
    layout: str
    models: list[str] = field(default_factory=list)
    pseudo_models: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _cache_root() -> Path:
    return Path(os.environ.get("SGIEVAL_LAYOUT_CACHE") or Path(platformdirs.user_cache_dir("sgieval")) / "layouts")


def _fingerprint(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _open_view(root: Path, layout: str, files: list[Path], dest_root: Path | None) -> tuple[CloneView, str, bool]:
    """(view, fingerprint, cached): the view stored in ``layout.json`` while its fingerprint of ``files`` holds, else an
    empty view to fill and close with :func:`_close_view`."""
    key = _fingerprint(files)
    dest = (dest_root or _cache_root()) / hashlib.sha256(str(root).encode()).hexdigest()[:12] / "sciaidanbench"
    manifest = dest / "layout.json"
    if manifest.is_file():
        try:
            m = json.loads(manifest.read_text(encoding="utf-8"))
            if m.get("fingerprint") == key:
                return CloneView(dest, root, layout, m["models"], m["pseudo_models"], m.get("notes", [])), key, True
        except (ValueError, KeyError):
            pass
    (dest / "responses" / "pseudo").mkdir(parents=True, exist_ok=True)
    for old in [*(dest / "responses").glob("*.json"), *(dest / "responses" / "pseudo").glob("*.json")]:
        old.unlink()
    return CloneView(dest, root, layout), key, False


def _close_view(view: CloneView, key: str, questions: list[dict[str, Any]]) -> CloneView:
    """Write the view's ``questions.json`` and ``layout.json`` (fingerprint ``key``); return it."""
    (view.folder / "questions.json").write_text(json.dumps(questions, indent=1, ensure_ascii=False), encoding="utf-8")
    (view.folder / "layout.json").write_text(
        json.dumps(
            {
                "layout": view.layout,
                "source": str(view.source),
                "fingerprint": key,
                "models": view.models,
                "pseudo_models": view.pseudo_models,
                "notes": view.notes,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return view


def sciaidanbench_view(folder: str | Path, dest_root: Path | None = None) -> CloneView | None:
    """The sgieval-layout view of the SciAidanBench clone holding ``folder``, or None. Questions: the question-list dict
    of ``benchmark/sciaidanbench_questions*.py`` (``in_published_results`` when a results file holds it), else those of
    the first real model's results file; ``responses/`` links each real model's file, pseudo-models go to
    ``responses/pseudo/``. Written under ``dest_root`` (default the user cache, ``$SGIEVAL_LAYOUT_CACHE``)."""
    root = _clone_root(Path(folder).expanduser().resolve())
    if root is None:
        return None
    files = sorted((root / "results" / "per_model").glob("model_*.json"))
    qfiles = sorted((root / "benchmark").glob("sciaidanbench_questions*.py")) if (root / "benchmark").is_dir() else []
    view, key, cached = _open_view(root, SCIAIDAN_CLONE, files + qfiles, dest_root)
    if cached:
        return view
    dest = view.folder
    results_questions: list[dict[str, Any]] = []
    for f in files:
        try:
            stores = load_stored_answers(f)
        except Exception as e:  # noqa: BLE001 - one unreadable file is reported, the others are used
            view.notes.append(f"{f.name}: {e}")
            continue
        names = [s.model for s in stores] or [f.stem.removeprefix("model_")]
        if any(is_pseudo(n) for n in names) or is_pseudo(f.stem):
            view.pseudo_models.update({n: f.name for n in names})
            (dest / "responses" / "pseudo" / f.name).symlink_to(f)
            continue
        view.models += names
        (dest / "responses" / f.name).symlink_to(f)
        if not results_questions:
            results_questions = questions_from_results(json.loads(f.read_text(encoding="utf-8")))
    published = {q["question"] for q in results_questions}
    groups = question_groups(qfiles)
    questions = [
        {"domain": domain, "subdomain": sub, "index_in_list": i, "question": q, "in_published_results": q in published}
        for domain, sub, qs in groups
        for i, q in enumerate(qs)
    ]
    return _close_view(view, key, questions or results_questions)


AIDAN_DOMAIN = "AidanBench"  # the discipline (``domain``) of an AidanBench clone's questions

LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"


def aidanbench_view(folder: str | Path, dest_root: Path | None = None) -> CloneView | None:
    """The sgieval-layout view of an AidanBench clone at ``folder``, or None: the ``questions`` list of
    ``benchmark/question_list.py`` (domain :data:`AIDAN_DOMAIN`) and each ``results/*.json`` rewritten under ``domains
    -> AidanBench``; a Git LFS pointer or an unreadable file is named in ``notes`` instead of failing the run."""
    root = Path(folder).expanduser().resolve()
    qfile = root / "benchmark" / "question_list.py"
    if not qfile.is_file():
        return None
    files = sorted((root / "results").glob("*.json")) if (root / "results").is_dir() else []
    view, key, cached = _open_view(root, AIDAN_CLONE, files + [qfile], dest_root)
    if cached:
        return view
    dest = view.folder
    lists = [v for v in literal_strings(qfile).values() if isinstance(v, list)]
    if not lists:
        raise DataNotFoundError(
            "no literal list of question strings",
            what=str(qfile),
            fix="restore benchmark/question_list.py from the AidanBench repository",
        )
    questions = [
        {"domain": AIDAN_DOMAIN, "subdomain": None, "index_in_list": i, "question": q, "in_published_results": True}
        for i, q in enumerate(lists[0])
    ]
    for f in files:
        with f.open("rb") as fh:
            head = fh.read(len(LFS_POINTER))
        if head == LFS_POINTER:
            view.notes.append(f"{f.name} is a Git LFS pointer, not the results (run `git lfs pull` in {root})")
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            models = data["models"]
            if not isinstance(models, dict):
                raise ValueError("'models' is not an object")
        except (ValueError, KeyError, TypeError) as e:
            view.notes.append(f"{f.name}: not an AidanBench results file ({e})")
            continue
        pseudo = [n for n in models if is_pseudo(n)]
        real = {n: v for n, v in models.items() if n not in pseudo}
        view.pseudo_models.update({n: f.name for n in pseudo})
        view.models += list(real)
        if real:
            (dest / "responses" / f.name).write_text(
                json.dumps({"domains": {AIDAN_DOMAIN: {"models": real}}}), encoding="utf-8"
            )
    return _close_view(view, key, questions)


def upstream_view(folder: str | Path) -> CloneView | None:
    """The view of a SciAidanBench or AidanBench clone at ``folder``, else None."""
    return sciaidanbench_view(folder) or aidanbench_view(folder)


def looks_sgi_snapshot(folder: Path) -> bool:
    """Whether ``folder`` holds a sub-folder named after an SGI-Bench dataset with a parquet file below it."""
    return folder.is_dir() and any(
        sub.is_dir() and task_of_name(sub.name) and next(sub.rglob("*.parquet"), None) is not None
        for sub in folder.iterdir()
    )
