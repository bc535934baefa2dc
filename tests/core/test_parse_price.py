"""``--price MODEL=IN,OUT`` as the run options read it (:func:`sgieval.core.parse_price`): the model is what stands
before the last ``=``, the prices are two finite non-negative numbers, and a bad value names the form expected."""

from __future__ import annotations

import pytest

from sgieval.core import FieldProblem, parse_price


@pytest.mark.parametrize(
    "value, want",
    [
        ("openai:o1-pro=150,600", ("openai:o1-pro", (150.0, 600.0))),
        ("my=model=0.5,1.5", ("my=model", (0.5, 1.5))),
        (" my-model =0,2.25", ("my-model", (0.0, 2.25))),
    ],
)
def test_price_option(value, want):
    assert parse_price(value) == want


@pytest.mark.parametrize(
    "value", ["o1-pro", "o1-pro=1", "=1,2", "o1-pro=a,2", "o1-pro=-1,2", "o1-pro=1,2,3", "o1-pro=inf,2"]
)
def test_bad_price_option_names_the_form(value):
    with pytest.raises(FieldProblem) as ei:
        parse_price(value)
    assert repr(value) in ei.value.reason
    assert ei.value.fix.startswith("give --price MODEL=IN,OUT")
