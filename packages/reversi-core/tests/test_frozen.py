"""``quick_init`` (``reversi_core._frozen``): the same objects as the dataclass's own ``__init__``."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from reversi_core._frozen import quick_init
from reversi_core.connector import CallContext
from reversi_core.engine import CallOutcome
from reversi_core.journal import StepRecord, StepState


def plain(cls: type) -> type:
    """The same dataclass with the generated ``__init__``, for comparison."""
    fields = dataclasses.fields(cls)
    namespace: dict[str, Any] = {"__annotations__": {f.name: Any for f in fields}}
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f.name] = dataclasses.field(default_factory=f.default_factory)
    return dataclasses.dataclass(frozen=True)(type(cls.__name__, (), namespace))


CASES: list[tuple[type, tuple[Any, ...], dict[str, Any]]] = [
    (CallOutcome, ("run_1", "fs.read_file", 3, StepState.SUCCEEDED), {"result": {"a": 1}}),
    (CallOutcome, ("run_1", "x", None, None), {}),
    (CallContext, (), {"run_id": "run_1", "step": 2, "idempotency_key": "k", "timeout": 1.5}),
    (
        StepRecord,
        ("run_1", 4, "fs.read_file", "read_only", "fs:read", {"path": "a"}, None),
        {"state": StepState.FAILED, "idempotency_key": "k", "started_at": 1.0, "error": "no"},
    ),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), CASES)
def test_quick_init_builds_what_the_generated_init_builds(
    cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    quick, slow = cls(*args, **kwargs), plain(cls)(*args, **kwargs)
    assert dataclasses.asdict(quick) == dataclasses.asdict(slow)
    assert repr(quick).split("(", 1)[1] == repr(slow).split("(", 1)[1]
    assert quick == cls(*args, **kwargs)
    assert dataclasses.replace(quick) == quick
    factories = {
        f.name for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING
    }
    ours = inspect.signature(cls).parameters.values()
    theirs = inspect.signature(plain(cls)).parameters.values()
    assert [p.name for p in ours] == [p.name for p in theirs]
    assert [p.default for p in ours if p.name not in factories] == [
        p.default for p in theirs if p.name not in factories
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.run_id = "other"  # type: ignore[misc]


def test_a_default_factory_gives_each_object_its_own_value() -> None:
    one = StepRecord("r", 1, "t", "read_only", "p", {}, None, StepState.SUCCEEDED, "k", 0.0)
    two = StepRecord("r", 2, "t", "read_only", "p", {}, None, StepState.SUCCEEDED, "k", 0.0)
    assert one.requires == two.requires == []
    assert one.requires is not two.requires
    with pytest.raises(TypeError, match="missing"):
        StepRecord("r", 1)  # type: ignore[call-arg]


def test_only_plain_frozen_dataclasses_are_taken() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclasses.dataclass
    class Thawed:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Later:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (Slotted, Thawed, Later):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)
