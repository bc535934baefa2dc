"""Benchmarks: one module per benchmark, each ending with its :class:`Benchmark` definition; the registry; the catalog;
:func:`load_benchmark` for a registered name, a JSONL file or a YAML benchmark definition (:mod:`.user`)."""

from __future__ import annotations

from ..core import lazy_exports

from pathlib import Path

from ..core import InputError, Item
from . import registry
from .base import Benchmark, Vocabulary
from .catalog import FACETS, Catalog, load_catalog
from .data import data_roots, find_benchmark_dir, pull

__all__ = [
    "Benchmark",
    "Catalog",
    "FACETS",
    "Vocabulary",
    "data_roots",
    "find_benchmark_dir",
    "load_benchmark",
    "load_catalog",
    "pull",
    "registry",
]


def load_benchmark(name: str, data_dir: str | Path | None = None) -> tuple[list[Item], str]:
    """Items of benchmark ``name`` and where they came from.

    Args:
        name: a registered benchmark (its folder found with :func:`find_benchmark_dir`), a path to a file whose suffix a
            definition loads (``.jsonl``), or a path to a YAML benchmark definition (registered, replacing one of its
            name).
        data_dir: the data folder to look in first.

    Returns:
        ``(items, source)``: the items and the folder or file they were read from.

    Raises:
        InputError: an unknown name or a missing file.
        DataNotFoundError: the benchmark's data is not found.
    """
    p = Path(name).expanduser()
    if p.suffix.lower() in (".yaml", ".yml"):
        from .user import load_yaml_benchmark

        defn = registry.register(load_yaml_benchmark(p), replace=True)
        return defn.loader(p), str(p)
    by_path = registry.for_path(name)
    if by_path is not None and registry.find(name) is None:
        if not p.is_file():
            raise InputError("file not found", what=str(p), fix="give the path of a JSONL benchmark file")
        return by_path.loader(p), str(p)
    defn = registry.get(name)
    if not defn.data_root and defn.path_suffixes:
        raise InputError(
            f"{name!r} is loaded from a file",
            what="benchmark",
            fix=f"give the path of a {' or '.join(defn.path_suffixes)} file instead of its name",
        )
    if not defn.data_root:  # a definition that knows its own files (a YAML benchmark registered earlier)
        return defn.loader(Path(defn.source or ".")), defn.source
    folder = find_benchmark_dir(defn.name, data_dir)
    assert folder is not None  # required=True: a missing folder raised DataNotFoundError
    return defn.loader(folder), str(folder)


_LAZY: dict[str, str] = {
    "how_to_get": "data",
    "predefined_metrics": "registry",
    "list_response_files": "sciaidanbench",
    "load_stored_answers": "sciaidanbench",
    "stored_responses": "catalog",
}

__all__ += sorted(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)
