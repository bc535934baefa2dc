"""Rubric library: YAML rubrics (``<name>.yaml``) read from ``starter`` (this folder; rigor is the SGI-Bench paper's six
criteria, arXiv 2512.16969 section 3), ``custom`` (``metric_pool/custom/``) and ``user`` (``$SGIEVAL_RUBRIC_DIR``, else
``platformdirs.user_config_dir("sgieval")/rubrics``), a later folder overriding an earlier one on the same name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from ...core import InputError, Rubric, slug_name

STARTER_DIR = Path(__file__).resolve().parent
CUSTOM_DIR = STARTER_DIR.parent / "custom"

MATCH_THRESHOLD = 0.5
"""Minimum MiniLM cosine (in [-1, 1]) between a quality phrase and a rubric's :func:`match_texts` for :func:`find_rubric`
(on the starter library "how rigorous" -> rigor 0.65; "correctness" best 0.47)."""

Origin = Literal["starter", "custom", "user"]


def slug(name: str) -> str:
    """A rubric or metric name as used in file names and metric columns.

    Args:
        name: any name ("Risk Awareness!").

    Returns:
        Lower case, runs of other characters as ``_``, at most 120 characters ("risk_awareness").

    Raises:
        InputError: nothing is left of the name.
    """
    return slug_name(name, what="rubric name")


def user_rubric_dir() -> Path:
    """The user's rubric folder (not created here).

    Returns:
        ``$SGIEVAL_RUBRIC_DIR`` when set, else ``user_config_dir("sgieval")/rubrics``.
    """
    from ...core import current_settings

    env = current_settings().rubric_dir
    if env:
        return env
    from platformdirs import user_config_dir

    return Path(user_config_dir("sgieval")) / "rubrics"


def _scan() -> dict[str, tuple[Origin, Path]]:
    found: dict[str, tuple[Origin, Path]] = {}
    folders: list[tuple[Origin, Path]] = [("starter", STARTER_DIR), ("custom", CUSTOM_DIR), ("user", user_rubric_dir())]
    for origin, d in folders:
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                found[p.stem] = (origin, p)
    return found


def list_rubrics() -> list[Rubric]:
    """Every rubric of the three folders (a later folder overriding an earlier one on a file name).

    Returns:
        The rubrics sorted by name, each caller's own copy.

    Raises:
        InputError: naming the file when one does not load.
    """
    return [_parsed(p).model_copy(deep=True) for _, (_, p) in sorted(_scan().items())]


def _bytes(p: Path) -> bytes | None:
    try:
        return p.read_bytes()
    except OSError:
        return None  # Rubric.from_yaml names the file and the fault


_LOADED: dict[tuple[str, bytes], Rubric] = {}  # parsed rubrics by (file, its bytes)


def _parsed(p: Path) -> Rubric:
    """The rubric of file ``p``, parsed once per content."""
    data = _bytes(p)
    if data is None:
        return Rubric.from_yaml(p)
    r = _LOADED.get((str(p), data))
    if r is None:
        r = Rubric.from_yaml(p)
        if _bytes(p) == data:  # not rewritten while it was parsed: kept for the next listing
            _LOADED[(str(p), data)] = r
    return r


def rubric_origin(name: str) -> tuple[Origin, Path] | None:
    """Where the rubric saved as ``<slug(name)>.yaml`` comes from.

    Args:
        name: a rubric name.

    Returns:
        ``(origin, file)``, or None when no folder holds it.
    """
    return _scan().get(slug(name))


def load_rubric(name: str) -> Rubric:
    """The rubric called ``name`` (file ``<slug(name)>.yaml``), or the one of a YAML file.

    Args:
        name: a rubric name or a YAML path.

    Returns:
        The rubric.

    Raises:
        InputError: no such rubric (listing the available names).
    """
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return Rubric.from_yaml(p)
    hit = _scan().get(slug(name))
    if hit is None:
        raise InputError(
            f"no rubric called {name!r}",
            what="rubric",
            fix=f"use one of: {', '.join(sorted(_scan()))} (or define one with `sgieval metric define`)",
        )
    return Rubric.from_yaml(hit[1])


def save_rubric(rubric: Rubric, user: bool = True, folder: str | Path | None = None) -> Path:
    """Write ``rubric`` as ``<slug(name)>.yaml``.

    Args:
        user: to the user folder (True) or to ``metric_pool/custom/`` (False).
        folder: another folder (overrides ``user``).

    Returns:
        The path written.
    """
    d = Path(folder) if folder is not None else (user_rubric_dir() if user else CUSTOM_DIR)
    path = d / f"{slug(rubric.name)}.yaml"
    rubric.to_yaml(path)
    return path


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", (s or "").lower()).strip()


_VEC_CACHE: dict[str, Any] = {}


def semantic_scores(query: str, texts: list[str]) -> list[float]:
    """MiniLM cosine between ``query`` and each of ``texts`` (text embeddings cached per process).

    Args:
        query: the phrase.
        texts: the texts compared with it.

    Returns:
        One cosine per text, in [-1, 1].
    """
    import numpy as np

    from ..embeddings import get_embedder

    if not texts:
        return []
    emb = get_embedder("minilm")
    missing = [t for t in dict.fromkeys(texts) if t not in _VEC_CACHE]
    if missing:
        _VEC_CACHE.update(zip(missing, emb.encode(missing)))
    q = emb.encode([query])[0]
    m = np.stack([_VEC_CACHE[t] for t in texts])
    return [float(x) for x in m @ q]  # rows are unit length (normalize=True)


def find_rubric(
    quality: str, *, threshold: float = MATCH_THRESHOLD, rubrics: list[Rubric] | None = None
) -> Rubric | None:
    """The rubric that measures ``quality``: an exact (case- and punctuation-insensitive) name match, else the one with
    the highest MiniLM cosine to any of its :func:`match_texts` when >= ``threshold``.

    Args:
        quality: the quality word or phrase.
        threshold: the least cosine for a semantic match, in [-1, 1].
        rubrics: the rubrics searched (default :func:`list_rubrics`).

    Returns:
        The rubric, or None.
    """
    pool = list_rubrics() if rubrics is None else list(rubrics)
    q = _norm(quality)
    if not q or not pool:
        return None
    for r in pool:
        if _norm(r.name) == q:
            return r
    sims = [max(semantic_scores(quality, match_texts(r))) for r in pool]
    best = max(range(len(pool)), key=lambda i: (sims[i], -i))
    return pool[best] if sims[best] >= threshold else None


def match_texts(rubric: Rubric) -> list[str]:
    """The texts a quality phrase is compared with.

    Args:
        rubric: the rubric.

    Returns:
        The name, ``"<name>: <first clause of the description>"`` and ``"<name>: <description>"``.
    """
    name = rubric.name.replace("_", " ")
    first = re.split(r"[;.]", rubric.description or "", maxsplit=1)[0].strip()
    return [name] + [f"{name}: {t}" for t in dict.fromkeys([first, (rubric.description or "").strip()]) if t]
