"""The definition of a benchmark in one object: a module ends with one :class:`Benchmark`, and ``register(defn)``
(:mod:`.registry`) makes its data layout, facets, vocabulary, prompts and metrics known."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from ..core import Item

FACET_NAMES = ("benchmark", "task", "discipline", "direction", "type")


def literal(text: str) -> str:
    """``text`` with its braces doubled, for a prompt template filled with ``str.format``."""
    return text.replace("{", "{{").replace("}", "}}")


SCIENCE_WORDS: dict[str, tuple[str, ...]] = {
    "chemistry": (r"chemistry", r"chemical(s)?", r"chemists?", r"chem"),
    "physics": (r"physics", r"physicists?"),
    "astronomy": (r"astronomy", r"astrophysics?", r"astronomical", r"cosmology", r"astro"),
    "life": (r"biology", r"biological", r"life sciences?", r"biomedical", r"bio", r"biologists?"),
    "neuroscience": (r"neuroscience", r"neuro", r"brain science"),
    "earth": (r"earth sciences?", r"geoscience", r"geology", r"climate", r"environmental( science)?", r"environment"),
    "material": (r"materials?( science)?", r"materials scientists?"),
    "nanoscience": (r"nano(science|technology)?",),
    "energy": (r"energy",),
    "information": (r"information( science)?", r"computer science", r"informatics"),
    "mathematics": (r"mathematics", r"maths?", r"mathematical"),
    "condensed matter": (r"condensed[- ]matter",),
    "synchrotron": (r"synchrotron", r"x-ray"),
}
"""Science concept -> the request words naming it, shared by every benchmark (:class:`Vocabulary` maps concepts)."""


@dataclass(frozen=True)
class Vocabulary:
    """Request words the offline questioning agent maps onto this benchmark's facet values (patterns: regular
    expressions matched case-insensitively on word boundaries). ``disciplines``: concept -> discipline or direction
    values (lower case), named by :data:`SCIENCE_WORDS` plus ``words`` (concept -> extra patterns). ``tasks``: (task,
    patterns), more specific first. ``names``: patterns naming the benchmark."""

    disciplines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tasks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as sgieval uses it.

    Fields:
        name: ``Item.benchmark`` of its items and the ``-b`` value (``"sgi-bench"``).
        loader: ``loader(folder) -> list[Item]``; raises InputError / DataNotFoundError naming file and fix.
        folder: the sub-folder of a data root holding the data (default ``name``).
        markers: file names that mark a folder as holding the data; empty: any ``*.jsonl``/``.parquet``/``.json``.
        pull: ``pull(dest) -> dest`` downloads the public data; None: no public download.
        skipped: ``skipped(folder) -> list[str]``: files the loader leaves out, as ``<file> (<why>)``.
        prompts: task -> a ``str.format`` template over the record's fields (:func:`literal`).
        metrics: the metrics scored on every run over its items (``@metric`` in this scope, else ``"*"``).
        primary: task -> the metric the ranking uses by default.
        prefer: quality -> metric names measuring it here, best first; else ``MetricSpec.qualities`` in pool order.
        owns: ``owns(item_benchmark) -> bool`` for derived item names (``jsonl:<stem>``); None: only ``name``.
        data_root: False when the loader gets a file path or knows its own files (a YAML benchmark).
        path_suffixes: ``-b <path>`` with one of these suffixes is loaded by this loader.
    """

    name: str
    loader: Callable[[Path], list[Item]]
    description: str = ""
    folder: str = ""
    markers: tuple[str, ...] = ()
    pull: Callable[[Path], Path] | None = None
    skipped: Callable[[Path], list[str]] | None = None
    source: str = ""
    tasks: tuple[str, ...] = ()
    facets: Mapping[str, str] = field(default_factory=dict)
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    prompts: Mapping[str, str] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    primary: Mapping[str, str] = field(default_factory=dict)
    prefer: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    owns: Callable[[str], bool] | None = None
    data_root: bool = True
    path_suffixes: tuple[str, ...] = ()

    @property
    def data_folder(self) -> str:
        return self.folder or self.name

    def holds(self, folder: Path) -> bool:
        """Whether ``folder`` holds this benchmark's data.

        Args:
            folder: a candidate data folder.

        Returns:
            True when every marker file is there, or (no markers) any ``.jsonl``/``.parquet``/``.json`` file is.
        """
        if not folder.is_dir():
            return False
        if self.markers:
            return all((folder / m).is_file() for m in self.markers)
        return any(p.suffix in (".jsonl", ".parquet", ".json") for p in folder.iterdir())

    def matches(self, item_benchmark: str) -> bool:
        """Whether items of ``item_benchmark`` are this benchmark's.

        Args:
            item_benchmark: an ``Item.benchmark`` value (``"sgi-bench"``, ``"jsonl:qa"``).

        Returns:
            True when this definition owns those items.
        """
        return item_benchmark == self.name or (self.owns is not None and self.owns(item_benchmark))
