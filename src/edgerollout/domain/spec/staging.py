"""Staged rollouts as a DaemonSet asks for them: the staging annotations, read.

Four DaemonSet annotations stage a rollout on a plain `apps/v1` DaemonSet (design §12), for both
update models:

| annotation                   | value                         | nodes held                          |
|------------------------------|-------------------------------|-------------------------------------|
| `edgerollout.io/paused`      | `"true"`                      | every node                          |
| `edgerollout.io/node-selector` | a `kubectl -l` label selector | the nodes it does not select      |
| `edgerollout.io/partition`   | `"N"` or `"P%"`               | the last N of the rollout's order   |
| `edgerollout.io/waves`       | `"pool-a, pool-b, *"`         | the nodes of the waves not started  |
| `edgerollout.io/batches`     | `"1, 5%, 25%"`                | the nodes after the current batch   |

The rollout's order is (wave, node name): the nodes of the first wave by name, then the second's.
A node whose label value names no wave belongs to `*` if the list has it; without `*` it is in no
wave and is held (`NOT_IN_WAVES`). Waves group nodes by the label `apps.openyurt.io/nodepool`
(OpenYurt's NodePool) unless `edgerollout.io/wave-label` names another key.

A wave has started when every Ready node of the waves before it that the rollout is meant to
upgrade (not held by the selector or the partition) runs the newest revision and is available
(`done`). Nodes that are not Ready do not hold later waves back: they are upgraded when they
return, before the nodes of later waves, since the order puts them first.

A partition counts over the nodes the selector leaves in (all of them without a selector); a
percentage is of those nodes, rounded up (Kruise rounds a partition up too: more nodes stay on the
old revision, never fewer). A node of the partition that already runs the newest revision stays
on it: nothing is rolled back.

Which nodes are held, and in what order the others go, is decided by `planning.holds` from
what is read here. Holding a node is all staging does: a held node keeps its verdict and its place in the budget
(a held node with an unavailable old pod still counts as unavailable), it is only never deleted
(AdvancedRollingUpdate) or offered an upgrade (OTA). A value that cannot be read holds every node
(`INVALID`), with one Warning naming it and what is accepted, as for a bad max-unavailable.

Batches (slow start, design §12.8) are cumulative targets over the nodes the selector and the
partition leave in, in the rollout's order: `"1, 5%, 25%"` upgrades 1 node, then up to 5 % of them,
then 25 %, then the rest (an implicit last batch of 100 %); a percentage rounds up. A batch starts
when every Ready node of the earlier ones runs the newest revision and is available (offline
nodes do not hold it back), and, with `edgerollout.io/batch-soak: "10m"` (a Go duration), once
the last of them has been available that long. Max-unavailable still bounds every moment.

A maintenance window (`edgerollout.io/maintenance-window`, design §13.2) holds every node of an
AdvancedRollingUpdate while it is closed (`WINDOW`, with when it opens): deletions start only inside
a window. It does not hold OTA: a node-initiated upgrade is the node's decision.

With `edgerollout.io/prepull: "true"` (design §13.5, `prepull_first`), an AdvancedRollingUpdate
holds a node whose image has not been pre-pulled (`PULLING`), unless something else holds it.

A node may hold its own pod through its agent (design §13.6, `node_hold`): `asked` names the nodes
whose hold is in force at this plan (`planning.node_holds` judges them against
`edgerollout.io/max-hold`, read here, whose unreadable value holds every node). Such a node is held
(`NODE_ASKED`) unless something else holds it, and, like a node that is not Ready, holds no wave or
batch back.
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName
from edgerollout.domain.spec.count import Count, read_count
from edgerollout.domain.spec.go_duration import GoDurationError, parse_go_duration
from edgerollout.domain.spec.label_selector import (
    LabelSelector,
    LabelSelectorError,
    label_key_problem,
    label_value_problem,
    parse_label_selector,
)
from edgerollout.domain.spec.maintenance_window import MaintenanceWindows, read_maintenance_window
from edgerollout.domain.spec.node_hold import DEFAULT_MAX_HOLD, HoldRequest, read_max_hold
from edgerollout.domain.spec.pause import read_pause
from edgerollout.domain.vocabulary import (
    BATCH_SOAK_ANNOTATION,
    BATCHES_ANNOTATION,
    EVERY_OTHER_WAVE,
    INVALID_BATCHES,
    INVALID_NODE_SELECTOR,
    INVALID_PARTITION,
    INVALID_WAVES,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_HOLD_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    NODEPOOL_LABEL,
    PARTITION_ANNOTATION,
    WAVE_LABEL_ANNOTATION,
    WAVES_ANNOTATION,
)

MOST_SELECTOR_REQUIREMENTS = 64
"""Every node is matched against every requirement on each reconcile (design §12.7)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Waves:
    """The waves in order (`*` as written), and the node label that names a node's wave."""

    names: tuple[str, ...]
    label: str
    _positions: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Each name's wave, found in one step for each node (the names are unique, §12.5).
        positions = {name: index for index, name in reversed(list(enumerate(self.names)))}
        object.__setattr__(self, "_positions", positions)

    def index_of(self, labels: Mapping[str, str]) -> int | None:
        """The wave of a node with these labels; None when it is in no wave."""
        value = labels.get(self.label)
        if value is not None and value != EVERY_OTHER_WAVE and value in self._positions:
            return self._positions[value]
        return self._positions.get(EVERY_OTHER_WAVE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Batches:
    """Slow start: cumulative `targets` over the rollout's nodes (an implicit last one of 100 %),
    each started once the earlier ones are done and, for `soak`, stayed so."""

    targets: tuple[Count, ...]
    soak: timedelta = timedelta(0)

    def __str__(self) -> str:
        written = ", ".join(target.written for target in self.targets)
        return written if not self.soak else f"{written}, soak {self.soak}"


MOST_BATCHES = 64
"""More batches than a person writes by hand; each is a pass over the rollout's nodes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Staging:
    """The staging annotations of a DaemonSet, read (see `read_staging`).

    `invalid` is True when a value could not be read; `notices` then holds one Warning each."""

    paused: bool = False
    selector: LabelSelector | None = None
    partition: Count | None = None
    waves: Waves | None = None
    batches: Batches | None = None
    window: MaintenanceWindows | None = None
    invalid: bool = False
    notices: tuple[Notice, ...] = ()
    window_opens: datetime | None = None
    only: frozenset[NodeName] | None = None
    """OTA deadlines: the controller may upgrade these nodes only; the others decide."""
    pulling: frozenset[NodeName] = frozenset()
    """Pre-pull before delete (`prepull_first`): these nodes wait for their image pre-pull. The
    few nodes to hold are named, not the others: those would include nodes of deletions in
    flight, which hold no pod."""
    pull_window: frozenset[NodeName] = frozenset()
    """Of `pulling`, those whose pull waits for the download window, which opens at `pull_opens`."""
    pull_opens: datetime | None = None
    max_hold: timedelta = DEFAULT_MAX_HOLD
    """The longest a node's hold lasts from when it was asked (`edgerollout.io/max-hold`)."""
    asked: Mapping[NodeName, HoldRequest] = field(default_factory=dict)
    """The nodes whose own hold is in force at this plan (`planning.node_holds`)."""
    first: frozenset[NodeName] = frozenset()
    """After a rollback, the nodes broken on the revision it left (`planning.rollback`): the
    rollout's order takes them before the others, and no wave or batch holds them back. The
    other holds are decided on the order without them, so a partition stays the same nodes."""

    @property
    def active(self) -> bool:
        """Whether any node may be held: without it, a rollout is planned as it always was."""
        return (
            self.paused
            or self.invalid
            or self.selector is not None
            or self.partition is not None
            or self.waves is not None
            or self.batches is not None
            or self.window_opens is not None
            or self.only is not None
            or bool(self.pulling)
            or bool(self.asked)
            or bool(self.first)
        )

    def for_deletions(self, now: datetime) -> "Staging":
        """The staging of an AdvancedRollingUpdate at `now`: with its maintenance window closed,
        when it opens next (every node is then held)."""
        if self.window is None or self.window.is_open(now):
            return self
        return replace(self, window_opens=self.window.next_open(now))


NOT_STAGED = Staging()


def read_staging(annotations: Mapping[str, str]) -> Staging:
    """The staging a DaemonSet's annotations ask for; every value that cannot be read is named in
    a Warning, and holds the whole rollout."""
    pause = read_pause(annotations)
    notices: list[Notice] = [] if pause.notice is None else [pause.notice]
    selector = _read_selector(annotations.get(NODE_SELECTOR_ANNOTATION))
    partition = _read_partition(annotations.get(PARTITION_ANNOTATION))
    waves = _read_waves(annotations.get(WAVES_ANNOTATION), annotations.get(WAVE_LABEL_ANNOTATION))
    batches = _read_batches(
        annotations.get(BATCHES_ANNOTATION), annotations.get(BATCH_SOAK_ANNOTATION)
    )
    window = read_maintenance_window(annotations.get(MAINTENANCE_WINDOW_ANNOTATION))
    max_hold = read_max_hold(annotations.get(MAX_HOLD_ANNOTATION))
    read_values = (selector, partition, waves, batches, window, max_hold)
    notices.extend(read for read in read_values if isinstance(read, Notice))
    return Staging(
        paused=pause.paused,
        selector=selector if isinstance(selector, LabelSelector) else None,
        partition=partition if isinstance(partition, Count) else None,
        waves=waves if isinstance(waves, Waves) else None,
        batches=batches if isinstance(batches, Batches) else None,
        window=window if isinstance(window, MaintenanceWindows) else None,
        max_hold=max_hold if isinstance(max_hold, timedelta) else DEFAULT_MAX_HOLD,
        invalid=any(notice is not pause.notice for notice in notices),
        notices=tuple(notices),
    )


def _warning(reason: str, annotation: str, raw: str, expected: str) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason=reason,
        message=(f'{annotation} is "{raw}": {expected}; no node is upgraded until it is fixed'),
        subject=raw,
    )


def _read_selector(raw: str | None) -> LabelSelector | Notice | None:
    if raw is None:
        return None
    if not raw.strip():
        problem = "an empty selector would select every node; remove the annotation for that"
    else:
        try:
            selector = parse_label_selector(raw)
        except LabelSelectorError as error:
            problem = str(error)
        else:
            if len(selector.requirements) <= MOST_SELECTOR_REQUIREMENTS:
                return selector
            problem = (
                f"{len(selector.requirements)} requirements are more than the "
                f"{MOST_SELECTOR_REQUIREMENTS} a node is matched against"
            )
    return _warning(
        INVALID_NODE_SELECTOR,
        NODE_SELECTOR_ANNOTATION,
        raw,
        f"{problem}; expected a label selector as kubectl -l takes it, such as "
        '"canary=true" or "zone in (a, b), !excluded"',
    )


def _read_partition(raw: str | None) -> Count | Notice | None:
    if raw is None:
        return None
    count = read_count(raw)
    if count is None:
        return _warning(
            INVALID_PARTITION,
            PARTITION_ANNOTATION,
            raw,
            'expected a number of nodes such as "2" or a percentage such as "20%"',
        )
    return None if count.zero else count  # a partition of 0 holds nothing


def _read_batches(raw: str | None, raw_soak: str | None) -> Batches | Notice | None:
    if raw is None:
        if raw_soak is None:
            return None
        return _warning(
            INVALID_BATCHES,
            BATCH_SOAK_ANNOTATION,
            raw_soak,
            f"it says how long each batch of {BATCHES_ANNOTATION} soaks, which is not set",
        )
    parts = [part.strip() for part in raw.split(",")]
    targets = [read_count(part) for part in parts]
    if (
        not parts
        or len(parts) > MOST_BATCHES
        or any(t is None or (t.percent and t.number > 100) or t.zero for t in targets)
    ):
        return _warning(
            INVALID_BATCHES,
            BATCHES_ANNOTATION,
            raw,
            f"expected up to {MOST_BATCHES} numbers of nodes or percentages up to 100%, none "
            'zero, separated by commas, such as "1, 5%, 25%": each the nodes upgraded once that '
            "batch is done, counted from the first",
        )
    soak = timedelta(0)
    if raw_soak is not None:
        try:
            nanoseconds = parse_go_duration(raw_soak.strip())
        except GoDurationError:
            nanoseconds = -1
        if nanoseconds < 0:
            return _warning(
                INVALID_BATCHES,
                BATCH_SOAK_ANNOTATION,
                raw_soak,
                'expected a duration such as "10m" or "1h30m", how long a batch stays done '
                "before the next starts",
            )
        soak = timedelta(microseconds=-(-nanoseconds // 1000))
    return Batches(targets=tuple(t for t in targets if t is not None), soak=soak)


def _read_waves(raw: str | None, label: str | None) -> Waves | Notice | None:
    if raw is None:
        if label is None:
            return None
        return _warning(
            INVALID_WAVES,
            WAVE_LABEL_ANNOTATION,
            label,
            f"it names the label of {WAVES_ANNOTATION}, which is not set",
        )
    key = NODEPOOL_LABEL if label is None else label.strip()
    names = tuple(name.strip() for name in raw.split(","))
    problem = label_key_problem(key)
    if problem is not None:
        return _warning(
            INVALID_WAVES, WAVE_LABEL_ANNOTATION, label or "", f"not a label key: {problem}"
        )
    problem = _waves_problem(names)
    if problem is not None:
        return _warning(
            INVALID_WAVES,
            WAVES_ANNOTATION,
            raw,
            f"{problem}; expected node-pool names (label values) separated by commas, "
            f'each once, and at most one "{EVERY_OTHER_WAVE}" for every other node, '
            'such as "pool-a, pool-b, *"',
        )
    return Waves(names=names, label=key)


def _waves_problem(names: tuple[str, ...]) -> str | None:
    for name in names:
        if not name:
            return "a wave has no name"
        if name != EVERY_OTHER_WAVE:
            problem = label_value_problem(name)
            if problem is not None:
                return f'"{name}" is not a label value: {problem}'
    repeated = sorted(name for name, seen in Counter(names).items() if seen > 1)
    if repeated:
        return f"{', '.join(repeated)} {'is' if len(repeated) == 1 else 'are'} named twice"
    return None
