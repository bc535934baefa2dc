"""What a report section is made of: a :class:`Section` (title, then blocks: sentences, sub-headings, typed tables,
figures) and the sentences it adds to the Answer; rendered elsewhere (Markdown, ``report.json``, the viewer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub Markdown table; ``|`` inside cells is escaped.

    Args:
        headers: the column names.
        rows: the cells, one list per row.

    Returns:
        The table text.
    """

    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


@dataclass
class Text:
    """A paragraph of full sentences (Markdown inline marks allowed: ``**bold**``, ``code``)."""

    text: str
    kind: str = field(default="text", init=False)

    def markdown(self) -> str:
        """Returns: ``text`` as it is."""
        return self.text


@dataclass
class Heading:
    """A sub-heading inside a section (rendered ``### text``)."""

    text: str
    kind: str = field(default="heading", init=False)

    def markdown(self) -> str:
        """Returns: ``### text``."""
        return f"### {self.text}"


@dataclass
class Table:
    """A typed table; each cell is the text the report prints; ``name`` a stable id for tests and the viewer."""

    headers: list[str]
    rows: list[list[Any]]
    name: str = ""
    kind: str = field(default="table", init=False)

    def __post_init__(self) -> None:
        for k, r in enumerate(self.rows):
            if len(r) != len(self.headers):
                raise ValueError(
                    f"table {self.name or self.headers!r}: row {k} has {len(r)} cells for {len(self.headers)} columns"
                )

    def markdown(self) -> str:
        """Returns: the table as GitHub Markdown (:func:`markdown_table`)."""
        return markdown_table(self.headers, self.rows)


@dataclass
class Figure:
    """A figure file under the run folder (``path`` relative to it, e.g. ``figures/ranking.png``)."""

    path: str
    alt: str
    kind: str = field(default="figure", init=False)

    def markdown(self) -> str:
        """Returns: ``![alt](path)``."""
        return f"![{self.alt}]({self.path})"


Block = Union[Text, Heading, Table, Figure]

ANSWER_PARTS = ("how_sure", "where", "caveats")  # the Answer's parts a section may add sentences to


@dataclass
class Section:
    """One section of the report: ``key`` a stable id, ``title`` the ``##`` heading, ``answer`` the sentences it adds to
    the Answer by part of :data:`ANSWER_PARTS`, ``leads`` its "where" sentences come right after the verdict."""

    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    answer: dict[str, list[str]] = field(default_factory=dict)
    leads: bool = False

    def __post_init__(self) -> None:
        bad = set(self.answer) - set(ANSWER_PARTS)
        if bad:
            raise ValueError(f"section {self.key!r}: unknown Answer part(s) {sorted(bad)}; use {ANSWER_PARTS}")

    @property
    def tables(self) -> list[Table]:
        """The section's tables, in order."""
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def figures(self) -> list[Figure]:
        """The section's figures, in order."""
        return [b for b in self.blocks if isinstance(b, Figure)]

    def markdown(self) -> str:
        """The section as Markdown: ``## title`` then every block, separated by blank lines.

        Returns:
            The Markdown text.
        """
        return "\n\n".join([f"## {self.title}", *(b.markdown() for b in self.blocks)])

    def text(self) -> str:
        """Everything the section states but its figures, for the fact check.

        Returns:
            The text.
        """
        return "\n".join([self.title, *(b.markdown() for b in self.blocks if not isinstance(b, Figure))])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``report.json``, the template, the viewer).

        Returns:
            ``{"key", "title", "blocks": [{"kind", ...fields}], "answer", "leads"}``.
        """
        blocks = []
        for b in self.blocks:
            if isinstance(b, Table):
                blocks.append({"kind": "table", "name": b.name, "headers": list(b.headers), "rows": b.rows})
            elif isinstance(b, Figure):
                blocks.append({"kind": "figure", "path": b.path, "alt": b.alt})
            else:
                blocks.append({"kind": b.kind, "text": b.text})
        return {"key": self.key, "title": self.title, "blocks": blocks, "answer": self.answer, "leads": self.leads}
