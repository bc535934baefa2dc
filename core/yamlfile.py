"""The one YAML loader of sgieval: PyYAML's safe loader refusing aliases and merge keys ("billion laughs"), repeated
keys, and files over :data:`MAX_YAML_BYTES` or nested too deeply, each with an InputError naming the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import InputError

MAX_YAML_BYTES = 8 * 2**20
"""The largest YAML file sgieval reads (8 MiB; a rubric or a definition is a few KB)."""


class _AliasFound(yaml.YAMLError):
    def __init__(self, mark: Any):
        self.problem_mark = mark


class _RepeatedKey(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first: int):
        self.key, self.line, self.first = key, line, first


class SafeUniqueLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader refusing aliases and repeated keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise _AliasFound(self.peek_event().start_mark)
        return super().compose_node(parent, index)


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key (a list): construct_mapping names it
            continue
        if first is not None:
            raise _RepeatedKey(key, key_node.start_mark.line + 1, first + 1)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


SafeUniqueLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_yaml(
    source: str | Path, *, what: str | None = None, fix: str = "correct the YAML file", text: str | None = None
) -> Any:
    """Parse one YAML document as plain data (mappings, lists, strings, numbers, booleans, null).

    Args:
        source: the file's path (read as UTF-8, a byte-order mark ignored).
        what: how the file is named in errors (default: ``source``).
        fix: the fix named in an error about the file's content.
        text: the YAML text itself (``source`` then only names it).

    Returns:
        The document's value (None for an empty document).

    Raises:
        InputError: unreadable, too large, invalid YAML, an alias, a repeated key or too deep (with the line).
    """
    where = what or str(source)
    if text is None:
        p = Path(source)
        try:
            size = p.stat().st_size
            if size > MAX_YAML_BYTES:
                raise InputError(
                    f"is {size / 2**20:.1f} MiB, larger than the {MAX_YAML_BYTES // 2**20} MiB a YAML file may be",
                    what=where,
                    fix="give the right file (a rubric or a definition is a few KB)",
                )
            text = p.read_bytes().decode("utf-8-sig")
        except OSError as e:
            raise InputError(f"cannot read file: {e.strerror or e}", what=where, fix="check the path") from e
        except UnicodeDecodeError as e:
            raise InputError(
                f"is not UTF-8 text ({e.reason} at byte {e.start})", what=where, fix="save the file as UTF-8"
            ) from e
    elif len(text) > MAX_YAML_BYTES:
        raise InputError(f"is larger than the {MAX_YAML_BYTES // 2**20} MiB a YAML text may be", what=where, fix=fix)
    try:
        return yaml.load(text, Loader=SafeUniqueLoader)  # noqa: S506 - a SafeLoader subclass
    except _AliasFound as e:
        raise InputError(
            f"line {e.problem_mark.line + 1}: uses a YAML alias (*name); aliases are not read (a few nested "
            "aliases can expand to gigabytes)",
            what=where,
            fix="write the value out in full where the alias stands",
        ) from None
    except _RepeatedKey as e:
        raise InputError(
            f"line {e.line}: repeated key {e.key!r} (first on line {e.first})", what=where, fix="keep one entry per key"
        ) from None
    except RecursionError:
        raise InputError("is nested too deeply to read", what=where, fix=fix) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"is not valid YAML: {at}{problem}", what=where, fix=fix) from None
