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


def test_names_every_problem_with_its_field_path() -> None:
    err = _error({"inner": {"count": "x"}})
    line = validation.one_line(err)
    assert line.startswith("inner.count: ") and "; name: Field required" in line, line
    assert "more)" not in line and "\n" not in line


class Many(BaseModel):
    values: list[int]


def test_shows_every_problem_up_to_a_generous_cap_then_counts_the_rest() -> None:
    with pytest.raises(ValidationError) as e:
        Many.model_validate({"values": [None] * validation.MAX_PROBLEMS})
    line = validation.one_line(e.value)
    assert all(f"values.{i}:" in line for i in range(validation.MAX_PROBLEMS))
    assert "more)" not in line
    with pytest.raises(ValidationError) as e:
        Many.model_validate({"values": [None] * (validation.MAX_PROBLEMS + 23)})
    line = validation.one_line(e.value)
    assert line.count("values.") == validation.MAX_PROBLEMS and line.endswith("(and 23 more)")


def test_a_sub_field_named_by_a_validator_joins_the_path_without_the_value_error_prefix() -> None:
    err = _error({"inner": {"count": -1}, "name": "n"})
    assert validation.first_error(err) == ("inner.count.roots[2].nic", "no such NIC")
    assert validation.one_line(err) == "inner.count.roots[2].nic: no such NIC"


class Strict(BaseModel, extra="forbid"):
    a: int


def test_every_problem_stays_on_the_one_line_and_a_long_key_is_cut() -> None:
    with pytest.raises(ValidationError) as e:
        Strict.model_validate({"a\nb": 1, "x" * 5000: 2})
    line = validation.one_line(e.value)
    assert "\n" not in line and "a\\nb: Extra inputs" in line and len(line) < 300, line
