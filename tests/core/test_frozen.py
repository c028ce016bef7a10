"""fast_init keeps a frozen, slotted dataclass's behaviour: it only sets the slots faster."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from service.core.catalog.models import get_model
from service.core.errors import InvalidConfiguration
from service.core.estimation.band import Band
from service.core.estimation.frozen import fast_init
from service.core.estimation.memory import TrainConfig


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Point:
    x: float
    y: float = 2.0
    extra: dict[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must be >= 0")


@dataclasses.dataclass(frozen=True, slots=True)
class _Plain:
    x: float
    y: float = 2.0
    extra: dict[str, int] = dataclasses.field(default_factory=dict)


def test_same_behaviour_as_the_generated_init() -> None:
    p = _Point(1.0)
    assert (p.x, p.y, p.extra) == (1.0, 2.0, {})
    assert _Point(1.0).extra is not p.extra  # the factory runs per instance
    assert _Point(1.0, y=3.0, extra={"a": 1}) == _Point(x=1.0, y=3.0, extra={"a": 1})
    assert repr(_Point(1.0)) == repr(_Plain(1.0)).replace("_Plain", "_Point")
    assert dataclasses.asdict(_Point(1.0, 3.0)) == dataclasses.asdict(_Plain(1.0, 3.0))
    assert dataclasses.replace(p, y=5.0) == _Point(1.0, 5.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="x must be"):
        _Point(-1.0)
    with pytest.raises(TypeError):
        _Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Point(1.0, z=1)  # type: ignore[call-arg]


def test_hot_types_keep_equality_hash_replace_and_pickling() -> None:
    b = Band(1.0, 2.0, 3.0)
    assert b == Band(low=1.0, mid=2.0, high=3.0) and hash(b) == hash(Band(1.0, 2.0, 3.0))
    assert pickle.loads(pickle.dumps(b)) == b
    assert dataclasses.replace(b, high=4.0) == Band(1.0, 2.0, 4.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.low = 0.0  # type: ignore[misc]
    c = TrainConfig(model=get_model("llama3-8b"), batch_size=2)
    assert c == TrainConfig(model=get_model("llama3-8b"), batch_size=2) and c.seq_len == 2048
    with pytest.raises(InvalidConfiguration):  # __post_init__ still validates
        dataclasses.replace(c, batch_size=0)


def test_refuses_what_it_does_not_reproduce() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class KwOnly:
        x: int = dataclasses.field(kw_only=True)

    for cls in (NoSlots, KwOnly):
        with pytest.raises(TypeError):
            fast_init(cls)


def test_replace_is_dataclasses_replace() -> None:
    """The generated copy gives what ``dataclasses.replace`` gives, runs ``__post_init__``'s
    checks, refuses an unknown field, and falls back for a class it cannot generate for."""
    from service.core.estimation.frozen import replace

    p = _Point(1.0, extra={"a": 1})
    for changes in ({}, {"y": 5.0}, {"x": 3.0, "extra": {}}):
        assert replace(p, **changes) == dataclasses.replace(p, **changes)
        assert replace(_Plain(1.0), **changes) == dataclasses.replace(_Plain(1.0), **changes)
    assert replace(p).extra is p.extra  # a copy shares the values, as dataclasses.replace does
    with pytest.raises(ValueError, match="x must be"):
        replace(p, x=-1.0)
    with pytest.raises(TypeError, match="no field"):
        replace(p, z=1.0)

    @dataclasses.dataclass(frozen=True)
    class _Derived:
        a: int
        b: int = dataclasses.field(init=False, default=7)

    d = _Derived(1)
    assert replace(d, a=2) == dataclasses.replace(d, a=2)
    cfg = TrainConfig(model=get_model("llama3-8b"), batch_size=2, seq_len=1024)
    assert replace(cfg, gpu_count=4) == dataclasses.replace(cfg, gpu_count=4)
    with pytest.raises(InvalidConfiguration):
        replace(cfg, batch_size=0)
