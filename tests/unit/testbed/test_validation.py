import pytest
from pydantic import BaseModel, ValidationError, field_validator

from testbed import validation


class Inner(BaseModel):
    count: int

    @field_validator("count")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 0:
            raise ValueError("roots[2].nic: no such NIC")
        return v


class Outer(BaseModel):
    inner: Inner
    name: str


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as e:
        Outer.model_validate(data)
    return e.value


def test_names_the_field_path_and_counts_the_rest() -> None:
    err = _error({"inner": {"count": "x"}})
    assert validation.one_line(err).startswith("inner.count: ")
    assert validation.one_line(err).endswith("(and 1 more)")


def test_a_sub_field_named_by_a_validator_joins_the_path_without_the_value_error_prefix() -> None:
    err = _error({"inner": {"count": -1}, "name": "n"})
    assert validation.first_error(err) == ("inner.count.roots[2].nic", "no such NIC")
    assert validation.one_line(err) == "inner.count.roots[2].nic: no such NIC"
