"""Rubrics: a custom metric judged per criterion (0-10 each) and aggregated to 0-100 (DESIGN.md "Contracts"),
saved to and loaded from YAML."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from .errors import InputError
from .files import atomic_write_text
from .records import MetricKind, MetricSpec, _Record
from .yamlfile import load_yaml

CriterionTool = Literal["web_search", "run_python"]
"""Tools a rubric criterion may need (``Criterion.needs``)."""
CRITERION_TOOLS: tuple[str, ...] = ("web_search", "run_python")
"""The values of :data:`CriterionTool`, in the order a judge is offered them."""


class Criterion(_Record):
    """One rubric criterion scored 0-10.  ``anchors`` maps score levels (e.g. 0, 5, 10) to what that level looks like;
    ``needs`` names the tools the judge must have to score it (:data:`CriterionTool`: ``web_search`` for a fact or
    reference check, ``run_python`` to re-run a computation or code). A judge gets tools only for a rubric with a
    criterion that needs them."""

    name: str
    description: str
    anchors: dict[int, str] = Field(default_factory=dict)
    needs: list[CriterionTool] = Field(default_factory=list)

    @field_validator("needs", mode="before")
    @classmethod
    def _tool_list(cls, v: Any) -> Any:
        return [] if v is None else [v] if isinstance(v, str) else v  # `needs: web_search` in a hand-written file

    @field_validator("needs")
    @classmethod
    def _unique_tools(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))

    @field_validator("anchors")
    @classmethod
    def _anchor_range(cls, v: dict[int, str]) -> dict[int, str]:
        for k in v:
            if not 0 <= int(k) <= 10:
                raise ValueError(f"anchor level {k} outside 0-10")
        return v


def criterion_key(name: str) -> str:
    """The identity of a criterion name: NFKC, case-folded, only letters, digits and combining marks kept.

    Args:
        name: a criterion name.

    Returns:
        The key.
    """
    folded = unicodedata.normalize("NFKC", name or "").casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LNM")


class Rubric(MetricSpec):
    """A custom metric judged per criterion (0-10 each) and aggregated to 0-100:

        value = 10 * sum_c w_c * s_c / sum_c w_c      (weighted mean x 10)

    (SGI-Bench paper section 3, metric customisation.)  Weights default to 1.
    Saved as YAML with :meth:`to_yaml` / :meth:`from_yaml`.
    """

    kind: MetricKind = "rubric"
    range: tuple[float, float] = (0.0, 100.0)
    criteria: list[Criterion]
    weights: dict[str, float] = Field(default_factory=dict)
    aggregation: Literal["weighted_mean_x10"] = "weighted_mean_x10"
    version: int = Field(default=1, ge=1)
    """Revision number (:meth:`revised`), recorded with every rubric score (``Score.details["rubric_version"]``)."""

    @model_validator(mode="after")
    def _weights(self) -> "Rubric":
        names = [c.name for c in self.criteria]
        if not names:
            raise ValueError(f"rubric {self.name!r} has no criteria")
        keys: dict[str, str] = {}
        for n in names:
            k = criterion_key(n)
            if not k:
                raise ValueError(f"rubric {self.name!r}: criterion name {n!r} has no letters or digits")
            if k in keys:
                raise ValueError(
                    f"rubric {self.name!r}: criterion {n!r} repeats criterion {keys[k]!r} "
                    "(names equal up to case and punctuation)"
                )
            keys[k] = n
        unknown = set(self.weights) - set(names)
        if unknown:
            raise ValueError(f"rubric {self.name!r}: weights for unknown criteria {sorted(unknown)}")
        for n in names:
            self.weights.setdefault(n, 1.0)
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ValueError(f"rubric {self.name!r}: weights must be >= 0 with a positive sum")
        return self

    def aggregate(self, criterion_scores: dict[str, float]) -> float:
        """The rubric's score: the weighted mean of the 0-10 criterion scores, times 10.

        Args:
            criterion_scores: criterion name -> score on 0-10.

        Returns:
            The score on 0-100.

        Raises:
            KeyError: naming a criterion without a score.
        """
        total_w = sum(self.weights[c.name] for c in self.criteria)
        s = 0.0
        for c in self.criteria:
            if c.name not in criterion_scores:
                raise KeyError(f"rubric {self.name!r}: no score for criterion {c.name!r}")
            s += self.weights[c.name] * float(criterion_scores[c.name])
        return 10.0 * s / total_w

    @property
    def tools_needed(self) -> list[str]:
        """The tools some criterion needs, in :data:`CRITERION_TOOLS` order."""
        wanted = {t for c in self.criteria for t in c.needs}
        return [t for t in CRITERION_TOOLS if t in wanted]

    def revised(
        self, criterion: str, *, description: str | None = None, anchors: dict[int, str] | None = None
    ) -> "Rubric":
        """A copy with one criterion's description and/or anchors replaced, as the next version.

        Args:
            criterion: the criterion's name (matched by :func:`criterion_key`).
            description: the new description (None keeps it).
            anchors: {level 0-10: text} merged over the criterion's anchors; "" removes a level.

        Returns:
            The revised rubric, ``version`` one higher; ``self`` is unchanged.

        Raises:
            KeyError: no criterion of that name.
            ValueError: an empty description, or an anchor level outside 0-10.
        """
        key = criterion_key(criterion)
        if not any(criterion_key(c.name) == key for c in self.criteria):
            raise KeyError(f"rubric {self.name!r} has no criterion {criterion!r}")
        if description is not None and not description.strip():
            raise ValueError(f"criterion {criterion!r}: the description cannot be empty")
        criteria = []
        for c in self.criteria:
            if criterion_key(c.name) == key:
                new_anchors = dict(c.anchors)
                for level, text in (anchors or {}).items():
                    if text.strip():
                        new_anchors[int(level)] = text.strip()
                    else:
                        new_anchors.pop(int(level), None)
                c = Criterion(
                    name=c.name,
                    description=description.strip() if description is not None else c.description,
                    anchors=dict(sorted(new_anchors.items())),
                    needs=list(c.needs),
                )
            criteria.append(c)
        return self.model_copy(update={"criteria": criteria, "version": self.version + 1}, deep=True)

    def to_yaml(self, path: str | Path | None = None, *, root: str | Path | None = None) -> str:
        """The rubric as YAML text, optionally written to a file.

        Args:
            path: where to write it, whole or not at all; None: not written.
            root: a folder (a run folder) below which no link is followed when writing.

        Returns:
            The YAML text.
        """
        data = self.model_dump(mode="json")
        if not data.get("qualities"):
            data.pop("qualities", None)  # rubric files stay as they were when no quality is declared
        for c in data.get("criteria") or []:
            if not c.get("needs"):
                c.pop("needs", None)  # nor when no criterion needs a tool
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        if path is not None:  # whole or not at all: a full disk leaves the old file (InputError naming the disk)
            atomic_write_text(path, text, root=root)
        return text

    @classmethod
    def from_yaml(cls, source: str | Path) -> "Rubric":
        """A rubric read from a YAML file or YAML text.

        Args:
            source: a path of a YAML file, or YAML text.

        Returns:
            The validated rubric.

        Raises:
            InputError: naming the file and the field when it is not a valid rubric.
        """
        p = Path(source) if not (isinstance(source, str) and "\n" in source) else None
        where = str(p) if p else "<yaml text>"
        fix = "check the rubric YAML against `sgieval metric show rigor`"
        data = load_yaml(p, fix=fix) if p else load_yaml(where, fix=fix, text=str(source))  # aliases, repeats refused
        try:
            return cls.model_validate(data)
        except ValueError as e:
            msg = str(e)
            if isinstance(e, ValidationError):
                msg = "; ".join(
                    (f"{'.'.join(map(str, err['loc']))}: " if err.get("loc") else "")
                    + str(err.get("msg", "")).removeprefix("Value error, ")
                    for err in e.errors()
                )
            raise InputError(msg.splitlines()[0], what=where, fix=fix) from e
