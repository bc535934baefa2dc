"""Rubric library: the starter rubrics shipped here, project rubrics and user rubrics.

Three folders hold rubrics as YAML (:meth:`sgieval.core.Rubric.to_yaml` format,
one rubric per file, file name ``<name>.yaml``), read in this order, a later
folder overriding an earlier one on the same name:

1. ``starter``: this folder (``metric_pool/rubrics/*.yaml``): rigor (the six
   criteria of the SGI-Bench paper, arXiv 2512.16969 section 3), feasibility,
   novelty, clarity, safety, reproducibility.
2. ``custom``: ``metric_pool/custom/*.yaml`` (rubrics kept with the project).
3. ``user``: the user's config folder, ``platformdirs.user_config_dir("sgieval")/rubrics``,
   or ``$SGIEVAL_RUBRIC_DIR`` when set (where ``sgieval metric define`` saves).

:func:`find_rubric` picks a rubric for a quality phrase ("rigour", "how
rigorous", "safe protocols"): an exact name match first, else the best
cosine similarity (MiniLM, :func:`sgieval.metric_pool.embeddings.get_embedder`)
between the phrase and each rubric's name, name + first clause of the
description, and name + description (:func:`match_texts`), when it is at
least :data:`MATCH_THRESHOLD`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from ...core import InputError, Rubric
from ...core import slug_name

__all__ = [
    "STARTER_DIR",
    "CUSTOM_DIR",
    "MATCH_THRESHOLD",
    "user_rubric_dir",
    "rubric_dirs",
    "list_rubrics",
    "load_rubric",
    "save_rubric",
    "find_rubric",
    "rubric_origin",
    "slug",
    "semantic_scores",
    "match_texts",
]

STARTER_DIR = Path(__file__).resolve().parent
CUSTOM_DIR = STARTER_DIR.parent / "custom"

MATCH_THRESHOLD = 0.5
"""Minimum MiniLM cosine (in [-1, 1]) between a quality phrase and a rubric's
``"<name>: <description>"`` for :func:`find_rubric` to return it.  Measured on
the starter library (best cosine over :func:`match_texts`): "rigour" -> rigor
0.80, "how rigorous" -> rigor 0.65, "hazards" -> safety 0.66, "reproducible
results" -> reproducibility 0.85; rejected: "correctness" (best 0.47),
"accuracy" (0.42), "cost awareness" (0.32), "banana bread" (0.23)."""

Origin = Literal["starter", "custom", "user"]


def slug(name: str) -> str:
    """A rubric/metric name as used in file names and metric columns:
    lower case, runs of other characters -> ``_`` ("Risk Awareness!" -> "risk_awareness"), at most 120
    characters (:func:`sgieval.core.files.slug_name`, the one rule for names that become paths).
    Raises InputError when nothing is left.

    Args:
        name: any name.

    Returns:
        The slug (lower case, at most 120 characters).

    Raises:
        InputError: nothing is left of the name.
    """
    return slug_name(name, what="rubric name")


def user_rubric_dir() -> Path:
    """``$SGIEVAL_RUBRIC_DIR`` when set, else ``user_config_dir("sgieval")/rubrics`` (not created here).

    Returns:
        The folder.
    """
    from ...core import current_settings

    env = current_settings().rubric_dir
    if env:
        return env
    from platformdirs import user_config_dir

    return Path(user_config_dir("sgieval")) / "rubrics"


def rubric_dirs() -> list[tuple[Origin, Path]]:
    """The folders read by :func:`list_rubrics`, lowest priority first."""
    return [("starter", STARTER_DIR), ("custom", CUSTOM_DIR), ("user", user_rubric_dir())]


def _scan() -> dict[str, tuple[Origin, Path]]:
    found: dict[str, tuple[Origin, Path]] = {}
    for origin, d in rubric_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                found[p.stem] = (origin, p)
    return found


def list_rubrics() -> list[Rubric]:
    """Every rubric of the three folders, sorted by name (a user rubric
    overrides a starter rubric of the same file name).  Raises InputError
    naming the file when one does not load.

    Returns:
        The rubrics.

    Raises:
        InputError: naming the file when one does not load.
    """
    return [_parsed(p).model_copy(deep=True) for _, (_, p) in sorted(_scan().items())]  # each caller's own copy


def _bytes(p: Path) -> bytes | None:
    try:
        return p.read_bytes()
    except OSError:
        return None  # Rubric.from_yaml names the file and the fault


def _parsed(p: Path) -> Rubric:
    """The rubric of file ``p``, parsed once per content (:data:`_LOADED`)."""
    data = _bytes(p)
    if data is None:
        return Rubric.from_yaml(p)
    r = _LOADED.get((str(p), data))
    if r is None:
        r = Rubric.from_yaml(p)
        if _bytes(p) == data:  # not rewritten while it was parsed: kept for the next listing
            _LOADED[(str(p), data)] = r
    return r


_LOADED: dict[tuple[str, bytes], Rubric] = {}
"""Rubrics parsed by :func:`list_rubrics`, by (file, its bytes): a run lists the library
more than once (the request's terms, the ranking metric), and parsing the YAML files is the cost."""


def rubric_origin(name: str) -> tuple[Origin, Path] | None:
    """(origin, file) of the rubric saved as ``<slug(name)>.yaml``, or None.

    Args:
        name: a rubric name.

    Returns:
        ``(origin, file)``, or None when no folder holds it.
    """
    return _scan().get(slug(name))


def load_rubric(name: str) -> Rubric:
    """The rubric called ``name`` (file ``<slug(name)>.yaml``; a path to a
    YAML file also works).  Raises InputError listing the available names.

    Args:
        name: a rubric name or a YAML path.

    Returns:
        The rubric.

    Raises:
        InputError: listing the available names.
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
    """Write ``rubric`` as ``<slug(name)>.yaml`` to the user folder
    (``user=True``), to ``metric_pool/custom/`` (``user=False``) or to
    ``folder`` when given.  Returns the path.

    Args:
        rubric: the rubric.
        user: the user folder (True) or ``metric_pool/custom/`` (False).
        folder: another folder.

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
    """MiniLM cosine between ``query`` and each of ``texts`` (values in [-1, 1]).
    Text embeddings are cached per process.

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
        for t, v in zip(missing, emb.encode(missing)):
            _VEC_CACHE[t] = v
    q = emb.encode([query])[0]
    m = np.stack([_VEC_CACHE[t] for t in texts])
    return [float(x) for x in m @ q]  # rows are unit length (normalize=True)


def find_rubric(
    quality: str, *, threshold: float = MATCH_THRESHOLD, rubrics: list[Rubric] | None = None
) -> Rubric | None:
    """The rubric that measures ``quality`` (a word or phrase), or None.

    Exact (case- and punctuation-insensitive) name match first; else the
    rubric with the highest MiniLM cosine between ``quality`` and any of
    its :func:`match_texts` (name, name + first clause, name + description), when that cosine is >= ``threshold``
    (default :data:`MATCH_THRESHOLD` = 0.5).  ``rubrics`` defaults to
    :func:`list_rubrics`.  Ties keep the alphabetically first rubric.

    Args:
        quality: the quality word or phrase.
        threshold: the least cosine for a semantic match, in [-1, 1].
        rubrics: the rubrics searched.

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
    """The texts a quality phrase is compared with: the name, ``"<name>:
    <first clause of the description>"`` (up to the first ``;`` or ``.``)
    and ``"<name>: <description>"``.

    Args:
        rubric: the rubric.

    Returns:
        The three texts.
    """
    name = rubric.name.replace("_", " ")
    first = re.split(r"[;.]", rubric.description or "", maxsplit=1)[0].strip()
    texts = [name]
    if first:
        texts.append(f"{name}: {first}")
    if rubric.description and rubric.description.strip() != first:
        texts.append(f"{name}: {rubric.description.strip()}")
    return texts
