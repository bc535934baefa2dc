"""Run options: how each :class:`~sgieval.core.RunConfig` field is set from the command line and from Python.

``RunConfig`` is the one declaration of a run's options.  Each field is an option: its docstring is its help text,
its type and default are the option's, and the ``sgieval ask`` options (``cli/commands.py``) and the keywords of
``sgieval.evaluate`` (``api.py``) are generated from :func:`run_options`.  A field may carry an :class:`Option` in
its ``Annotated`` metadata to name its flag or keyword differently (``--benchmark``/``-b``, keyword ``judge``), to
keep it off one side (``run_id`` is no ``ask`` option), or, as :data:`RUN_RECORD`, to say the run fills it
(``sent_params``): such a field is no option at all.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["Option", "RUN_RECORD", "RunOption", "run_options", "option_names"]

_UNSET: Any = object()


@dataclass(frozen=True)
class Option:
    """How one RunConfig field is spelled as a run option (``Annotated`` metadata; every field without one is an
    option under its own name).

    Attributes:
        flag: the ``ask`` long flag (default ``--<field name with dashes>``); for a bool field whose default is
            True the flag switches it off (``--no-cache`` for ``use_cache``).
        short: the ``ask`` short flag (``-b``), or "" for none.
        keyword: the ``evaluate`` keyword (default: the field name).
        cli: False: not an ``ask`` option (e.g. ``run_id``, which the command makes).
        api: False: not an ``evaluate`` keyword.
        positional: the ``ask`` argument and ``evaluate``'s first positional parameter (``request``).
        api_default: the keyword's default when it differs from the field's (``yes``: True in Python, where
            nobody can answer a prompt).
        off_help: for a bool field whose default is True, the help of the ``ask`` flag that switches it off,
            saying what the flag does (``--no-cache``: "Do not use the model-call cache: ..."); the field's
            docstring, which says what the field means, stays the ``evaluate`` keyword's help.
    """

    flag: str = ""
    short: str = ""
    keyword: str = ""
    cli: bool = True
    api: bool = True
    positional: bool = False
    api_default: Any = _UNSET
    off_help: str = ""


RUN_RECORD = Option(cli=False, api=False)
"""Marks a RunConfig field the run fills (the parameters sent, the settings): no option on either side."""


@dataclass(frozen=True)
class RunOption:
    """One run option as both sides see it (:func:`run_options`).

    Attributes:
        field: the RunConfig field name.
        flag, short: the ``ask`` flags (``--max-concurrency``, "" for no short flag).
        keyword: the ``evaluate`` keyword.
        help: the help text (the field's docstring or description).
        cli_help: the ``ask`` flag's help: ``help``, or :attr:`Option.off_help` for a flag that switches a
            field off (``--no-cache``).
        annotation: the field's type (e.g. ``int | None``, ``list[str]``).
        default: the field's default (a default factory called once); ``api_default`` the keyword's.
        cli, api, positional: as in :class:`Option`.
    """

    field: str
    flag: str
    short: str
    keyword: str
    help: str
    cli_help: str
    annotation: Any
    default: Any
    api_default: Any
    cli: bool
    api: bool
    positional: bool

    @property
    def scalar(self) -> Any:
        """The option's value type without ``None`` and with a ``Literal`` as its values' type: ``int`` for
        ``int | None``, ``str`` for ``Literal["low", "high"] | None``, ``list[str]`` for ``list[str]``."""
        return _scalar(self.annotation)

    @property
    def is_list(self) -> bool:
        """Whether the option takes several values (repeated, or comma-separated)."""
        return typing.get_origin(self.scalar) is list

    @property
    def switches_off(self) -> bool:
        """Whether the ``ask`` flag sets a bool field whose default is True to False (``--no-cache``)."""
        return self.scalar is bool and self.default is True

    def error_name(self, side: Literal["cli", "api"]) -> str:
        """How an error names this option: the flag on the command line, else the keyword (``name=True`` for a
        bool keyword that is off by default, e.g. ``unsafe_local_exec=True``).

        Args:
            side: ``"cli"`` (the command line) or ``"api"`` (the Python API).

        Returns:
            The flag or keyword.
        """
        if side == "cli":
            return self.flag
        return f"{self.keyword}=True" if self.scalar is bool and self.default is False else self.keyword


def _scalar(t: Any) -> Any:
    """``t`` without ``None`` and with a ``Literal`` as its values' type (:attr:`RunOption.scalar`)."""
    if typing.get_origin(t) in (Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        t = args[0] if len(args) == 1 else t
    if typing.get_origin(t) is Literal:
        t = type(typing.get_args(t)[0])
    return t


def run_options(config_cls: type[BaseModel]) -> list[RunOption]:
    """The run options of ``config_cls`` (RunConfig or a subclass), in field order.

    Args:
        config_cls: a pydantic model class whose fields are run options (see the module docstring).

    Returns:
        One :class:`RunOption` per field not marked :data:`RUN_RECORD`.

    Raises:
        TypeError: an option field has no help text (a docstring under the field, or ``Field(description=...)``),
            or an ``ask`` flag that switches a field off has no ``off_help``.
    """
    out = []
    for name, info in config_cls.model_fields.items():
        meta = next((m for m in info.metadata if isinstance(m, Option)), Option())
        if not (meta.cli or meta.api):
            continue
        if not (info.description or "").strip():
            raise TypeError(
                f"{config_cls.__name__}.{name} has no help text: write a docstring under the field (it is the "
                "option's help on the command line and in the Python API)"
            )
        switches_off = _scalar(info.annotation) is bool and info.default is True
        if switches_off and meta.cli and not meta.off_help.strip():
            raise TypeError(
                f"{config_cls.__name__}.{name} is switched off by its ask flag, which has no help text: give its "
                'Option an off_help saying what the flag does (e.g. "Do not use the model-call cache: ...")'
            )
        help_text = " ".join(info.description.split())  # type: ignore[union-attr]
        if info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg]
        else:
            default = None if info.default is PydanticUndefined else info.default
        out.append(
            RunOption(
                field=name,
                flag=meta.flag or "--" + name.replace("_", "-"),
                short=meta.short,
                keyword=meta.keyword or name,
                help=help_text,
                cli_help=" ".join(meta.off_help.split()) if switches_off else help_text,
                annotation=info.annotation,
                default=default,
                api_default=default if meta.api_default is _UNSET else meta.api_default,
                cli=meta.cli,
                api=meta.api,
                positional=meta.positional,
            )
        )
    return out


def option_names(config_cls: type[BaseModel], side: Literal["cli", "api"]) -> dict[str, str]:
    """RunConfig field -> how an error on it names the option on ``side`` (``"cli"``: ``--max-concurrency``;
    ``"api"``: ``max_concurrency``), the ``names`` of :meth:`RunConfig.checked`.

    Args:
        config_cls: the config class (:class:`RunConfig`).
        side: ``"cli"`` or ``"api"``.

    Returns:
        field -> option name.
    """
    return {o.field: o.error_name(side) for o in run_options(config_cls) if (o.cli if side == "cli" else o.api)}
