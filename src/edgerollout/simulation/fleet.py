"""The fleet a simulation plays: what a fleet file says, read and checked, into frozen values.

A fleet file is a YAML mapping (the command line reads the YAML; this module sees the parsed
value, so it stays pure and is tested without files). Every key has a default, so an empty file
is a valid fleet of 1,000 Ready nodes in one pool. Anything the reader cannot take is refused
with a `FleetError` naming the key by its dotted path (`pools[1].link_rate`) and what is
expected, before anything is simulated: a typo (`link_rat`) silently ignored would make the
simulation answer a question nobody asked. docs/simulation.md lists every key.
"""

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from edgerollout.domain.spec.label_selector import label_key_problem, label_value_problem
from edgerollout.domain.vocabulary import NODEPOOL_LABEL
from edgerollout.simulation.units import UnitError, read_duration, read_rate, read_size

HOURS_PER_DAY = 24
# The standard normal's 90th percentile: a log-normal's p90 is its median times exp(Z90 * sigma).
Z90 = 1.2815515655446004


class FleetError(ValueError):
    """A fleet file value that cannot be used: `path` is its dotted key, `problem` says why."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Latency:
    """How long one stage of a pod takes: `median` seconds, and one pod in ten takes more than
    `p90` (log-normal, as such latencies are). With `p90 == median`, always exactly `median`."""

    median: float
    p90: float

    @classmethod
    def exactly(cls, seconds: float) -> "Latency":
        return cls(seconds, seconds)

    def draw(self, rng: random.Random) -> float:
        """One pod's duration (nothing is drawn when there is no spread)."""
        if self.p90 == self.median:
            return self.median
        sigma = math.log(self.p90 / self.median) / Z90
        return rng.lognormvariate(math.log(self.median), sigma)


@dataclass(frozen=True, slots=True, kw_only=True)
class Outages:
    """A pool's daily outages: each day, each of its nodes is offline once with chance
    `fraction`, for `duration` seconds, starting in an hour of the day (UTC) drawn with the
    weights `start_hours` (24 of them), at a uniform moment within that hour."""

    fraction: float = 0.0
    duration: float = 3600.0
    start_hours: tuple[float, ...] = (1.0,) * HOURS_PER_DAY


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    """A node pool: its name (the value of the fleet's pool label on its nodes), its share of
    the nodes (`weight`, relative to the other pools'), its link rate in bytes per second, and
    its daily outages."""

    name: str
    weight: float = 1.0
    link_rate: float = 10e6 / 8
    outages: Outages = field(default_factory=Outages)


@dataclass(frozen=True, slots=True, kw_only=True)
class Flapping:
    """Nodes whose link comes and goes all day: a `fraction` of the fleet, each online for a
    random time of mean `online` seconds, then offline for one of mean `offline` (exponential)."""

    fraction: float = 0.0
    online: float = 1800.0
    offline: float = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class OtaModel:
    """When an OTA node asks its agent to upgrade: `upgrade_after` seconds on average
    (exponential) after its pod is told `PodNeedUpgrade=True`, when online."""

    upgrade_after: float = 3600.0


DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)
DEFAULT_POOLS = (Pool(name="default"),)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    """A fleet file, read (see docs/simulation.md for what each value means)."""

    nodes: int = 1000
    seed: int = 0
    start: datetime = DEFAULT_START
    horizon: float = 7 * 86400.0
    sample_every: float = 60.0
    pool_label: str = NODEPOOL_LABEL
    image_size: float = 100e6
    container_start: Latency = Latency(10.0, 10.0)
    termination: Latency = Latency(5.0, 5.0)
    recreate: Latency = Latency(1.0, 1.0)
    reconcile_delay: float = 1.0
    crash_loop: float = 0.0
    always_offline: float = 0.0
    flapping: Flapping = field(default_factory=Flapping)
    ota: OtaModel = field(default_factory=OtaModel)
    pools: tuple[Pool, ...] = DEFAULT_POOLS


Reader = Callable[[object, str], Any]


def read_fleet(raw: object) -> Fleet:
    """The fleet a parsed fleet file describes (None, an empty file: every default)."""
    return Fleet(**_fields(raw, "", _FLEET_KEYS))


def _fields(raw: object, path: str, readers: Mapping[str, Reader]) -> dict[str, Any]:
    """The values of a mapping's keys, each read by its reader; an unknown key is refused."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        where = path or "the fleet file"
        raise FleetError(where, f"expected a mapping of keys to values, got {_shown(raw)}")
    for key in raw:
        if key not in readers:
            raise FleetError(
                _key(path, str(key)), f"unknown key; expected one of {', '.join(readers)}"
            )
    return {key: read(raw[key], _key(path, key)) for key, read in readers.items() if key in raw}


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(raw: object) -> str:
    return f"{type(raw).__name__} {raw!r}"


def _unit(reader: Callable[[object], float]) -> Reader:
    def read(raw: object, path: str) -> float:
        try:
            return reader(raw)
        except UnitError as error:
            raise FleetError(path, str(error)) from None

    return read


def _positive(reader: Reader) -> Reader:
    def read(raw: object, path: str) -> float:
        value: float = reader(raw, path)
        if value <= 0:
            raise FleetError(path, f"must be more than zero, got {raw!r}")
        return value

    return read


_duration = _unit(read_duration)
_size = _unit(read_size)
_rate = _positive(_unit(read_rate))


def _latency(raw: object, path: str) -> Latency:
    """A duration, or a mapping `{median: D, p90: D}` (p90 at least the median)."""
    if not isinstance(raw, Mapping):
        return Latency.exactly(_duration(raw, path))
    values = _fields(raw, path, _LATENCY_KEYS)
    if "median" not in values:
        raise FleetError(_key(path, "median"), "a spread latency needs its median")
    median = values["median"]
    p90 = values.get("p90", median)
    if p90 < median:
        raise FleetError(_key(path, "p90"), f"must be at least the median, got {raw['p90']!r}")
    if p90 > median and median == 0:
        raise FleetError(_key(path, "median"), "must be more than zero when p90 is above it")
    return Latency(median, p90)


def _number(raw: object, path: str) -> float:
    if not isinstance(raw, int | float) or isinstance(raw, bool):
        raise FleetError(path, f"expected a number, got {_shown(raw)}")
    if raw != raw or raw in (float("inf"), float("-inf")):
        raise FleetError(path, f"must be a finite number, got {raw}")
    return float(raw)


def _fraction(raw: object, path: str) -> float:
    value = _number(raw, path)
    if not 0.0 <= value <= 1.0:
        raise FleetError(path, f"must be a fraction from 0 to 1, got {raw!r}")
    return value


def _weight(raw: object, path: str) -> float:
    value = _number(raw, path)
    if value < 0:
        raise FleetError(path, f"must not be negative, got {raw!r}")
    return value


def _integer(raw: object, path: str) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise FleetError(path, f"expected a whole number, got {_shown(raw)}")
    return raw


def _count(raw: object, path: str) -> int:
    value = _integer(raw, path)
    if value < 0:
        raise FleetError(path, f"must not be negative, got {value}")
    return value


def _start(raw: object, path: str) -> datetime:
    # YAML reads an unquoted timestamp as a datetime itself; a quoted one stays a string.
    if isinstance(raw, datetime):
        moment = raw
    elif isinstance(raw, str):
        try:
            moment = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            raise FleetError(
                path, f"expected an RFC 3339 time such as 2026-01-05T00:00:00Z, got {raw!r}"
            ) from None
    else:
        raise FleetError(path, f"expected an RFC 3339 time, got {_shown(raw)}")
    if moment.tzinfo is None:
        raise FleetError(path, f"needs a time zone (such as Z for UTC), got {raw!r}")
    return moment.astimezone(UTC)


def _label_key(raw: object, path: str) -> str:
    if not isinstance(raw, str):
        raise FleetError(path, f"expected a label key, got {_shown(raw)}")
    problem = label_key_problem(raw)
    if problem is not None:
        raise FleetError(path, problem)
    return raw


def _pool_name(raw: object, path: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise FleetError(path, f"expected a pool name (a label value), got {_shown(raw)}")
    problem = label_value_problem(raw)
    if problem is not None:
        raise FleetError(path, problem)
    return raw


def _start_hours(raw: object, path: str) -> tuple[float, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str) or len(raw) != HOURS_PER_DAY:
        raise FleetError(path, f"expected a list of {HOURS_PER_DAY} weights, one per hour (UTC)")
    weights = tuple(_weight(value, f"{path}[{index}]") for index, value in enumerate(raw))
    if not any(weights):
        raise FleetError(path, "at least one hour needs a weight above zero")
    return weights


def _outages(raw: object, path: str) -> Outages:
    return Outages(**_fields(raw, path, _OUTAGE_KEYS))


def _pool(raw: object, path: str) -> Pool:
    values = _fields(raw, path, _POOL_KEYS)
    if "name" not in values:
        raise FleetError(_key(path, "name"), "every pool needs a name")
    return Pool(**values)


def _pools(raw: object, path: str) -> tuple[Pool, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        raise FleetError(path, "expected a list of at least one pool")
    pools = tuple(_pool(item, f"{path}[{index}]") for index, item in enumerate(raw))
    seen: set[str] = set()
    for index, pool in enumerate(pools):
        if pool.name in seen:
            raise FleetError(f"{path}[{index}].name", f"{pool.name!r} is named twice")
        seen.add(pool.name)
    if not any(pool.weight for pool in pools):
        raise FleetError(path, "at least one pool needs a weight above zero")
    return pools


def _flapping(raw: object, path: str) -> Flapping:
    return Flapping(**_fields(raw, path, _FLAPPING_KEYS))


def _ota(raw: object, path: str) -> OtaModel:
    return OtaModel(**_fields(raw, path, _OTA_KEYS))


_LATENCY_KEYS: Mapping[str, Reader] = {"median": _duration, "p90": _duration}
_OUTAGE_KEYS: Mapping[str, Reader] = {
    "fraction": _fraction,
    "duration": _duration,
    "start_hours": _start_hours,
}
_POOL_KEYS: Mapping[str, Reader] = {
    "name": _pool_name,
    "weight": _weight,
    "link_rate": _rate,
    "outages": _outages,
}
_FLAPPING_KEYS: Mapping[str, Reader] = {
    "fraction": _fraction,
    "online": _positive(_duration),
    "offline": _positive(_duration),
}
_OTA_KEYS: Mapping[str, Reader] = {"upgrade_after": _duration}
_FLEET_KEYS: Mapping[str, Reader] = {
    "nodes": _count,
    "seed": _integer,
    "start": _start,
    "horizon": _duration,
    "sample_every": _positive(_duration),
    "pool_label": _label_key,
    "image_size": _size,
    "container_start": _latency,
    "termination": _latency,
    "recreate": _latency,
    "reconcile_delay": _duration,
    "crash_loop": _fraction,
    "always_offline": _fraction,
    "flapping": _flapping,
    "ota": _ota,
    "pools": _pools,
}
