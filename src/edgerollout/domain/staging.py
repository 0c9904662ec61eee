"""Staged rollouts: which nodes a rollout holds back, and in what order it takes the others.

Four DaemonSet annotations stage a rollout on a plain `apps/v1` DaemonSet (design §12), for both
update models:

| annotation                   | value                         | nodes held                          |
|------------------------------|-------------------------------|-------------------------------------|
| `edgerollout.io/paused`      | `"true"`                      | every node                          |
| `edgerollout.io/node-selector` | a `kubectl -l` label selector | the nodes it does not select      |
| `edgerollout.io/partition`   | `"N"` or `"P%"`               | the last N of the rollout's order   |
| `edgerollout.io/waves`       | `"pool-a, pool-b, *"`         | the nodes of the waves not started  |

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

Holding a node is all staging does: a held node keeps its verdict and its place in the budget
(a held node with an unavailable old pod still counts as unavailable), it is only never deleted
(AdvancedRollingUpdate) or offered an upgrade (OTA). A value that cannot be read holds every node
(`INVALID`), with one Warning naming it and what is accepted, as for a bad max-unavailable.

A maintenance window (`edgerollout.io/maintenance-window`, design §13.2) holds every node of an
AdvancedRollingUpdate while it is closed (`WINDOW`, with when it opens): deletions start only inside
a window. It does not hold OTA: a node-initiated upgrade is the node's decision.

With `edgerollout.io/prepull: "true"` (design §13.5, `prepull_first`), an AdvancedRollingUpdate
holds a node whose image has not been pre-pulled (`PULLING`), unless something else holds it.
"""

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from edgerollout.domain.count import Count, Rounding, read_count
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.label_selector import (
    LabelSelector,
    LabelSelectorError,
    label_key_problem,
    label_value_problem,
    parse_label_selector,
)
from edgerollout.domain.maintenance_window import MaintenanceWindows, read_maintenance_window
from edgerollout.domain.model import NodeName
from edgerollout.domain.pause import read_pause
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    EVERY_OTHER_WAVE,
    HELD_BY_INVALID_SETTING,
    HELD_BY_NODE_SELECTOR,
    HELD_BY_PARTITION,
    HELD_BY_PAUSE,
    HELD_BY_WAVE,
    HELD_BY_WINDOW,
    INVALID_NODE_SELECTOR,
    INVALID_PARTITION,
    INVALID_WAVES,
    MAINTENANCE_WINDOW_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    NODEPOOL_LABEL,
    NOT_IN_WAVES,
    PARTITION_ANNOTATION,
    WAVE_LABEL_ANNOTATION,
    WAVE_STARTED,
    WAVES_ANNOTATION,
)


class HoldReason(StrEnum):
    """Why a node is held; the value is how status and `plan` say it."""

    PAUSED = "paused"
    INVALID = "invalid setting"
    SELECTOR = "node selector"
    NOT_IN_WAVES = "in no wave"
    PARTITION = "partition"
    WAVE = "wave"
    WINDOW = "maintenance window closed"
    NODE_DECIDES = "OTA: the node decides"
    PULLING = "waiting for its image pre-pull"


@dataclass(frozen=True, slots=True, kw_only=True)
class Hold:
    """A node held back, and why; `wave` names the wave it waits for (reason WAVE)."""

    reason: HoldReason
    wave: str | None = None
    opens: datetime | None = None

    def __str__(self) -> str:
        if self.reason is HoldReason.WAVE and self.wave is not None:
            return f"wave {self.wave}"
        if self.reason is HoldReason.WINDOW and self.opens is not None:
            return f"{self.reason}, opens {format_rfc3339(self.opens)}"
        return str(self.reason)

    @property
    def condition_reason(self) -> str:
        """The reason of `PodNeedUpgrade=False` on an outdated OTA pod held back so."""
        return _CONDITION_REASONS[self.reason]


_CONDITION_REASONS = {
    HoldReason.PAUSED: HELD_BY_PAUSE,
    HoldReason.INVALID: HELD_BY_INVALID_SETTING,
    HoldReason.SELECTOR: HELD_BY_NODE_SELECTOR,
    HoldReason.NOT_IN_WAVES: NOT_IN_WAVES,
    HoldReason.PARTITION: HELD_BY_PARTITION,
    HoldReason.WAVE: HELD_BY_WAVE,
    HoldReason.WINDOW: HELD_BY_WINDOW,
    HoldReason.NODE_DECIDES: "",
    HoldReason.PULLING: "",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Waves:
    """The waves in order (`*` as written), and the node label that names a node's wave."""

    names: tuple[str, ...]
    label: str

    def index_of(self, labels: Mapping[str, str]) -> int | None:
        """The wave of a node with these labels; None when it is in no wave."""
        value = labels.get(self.label)
        if value is not None and value in self.names and value != EVERY_OTHER_WAVE:
            return self.names.index(value)
        if EVERY_OTHER_WAVE in self.names:
            return self.names.index(EVERY_OTHER_WAVE)
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Staging:
    """The staging annotations of a DaemonSet, read (see `read_staging`).

    `invalid` is True when a value could not be read; `notices` then holds one Warning each."""

    paused: bool = False
    selector: LabelSelector | None = None
    partition: Count | None = None
    waves: Waves | None = None
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

    @property
    def active(self) -> bool:
        """Whether any node may be held: without it, a rollout is planned as it always was."""
        return (
            self.paused
            or self.invalid
            or self.selector is not None
            or self.partition is not None
            or self.waves is not None
            or self.window_opens is not None
            or self.only is not None
            or bool(self.pulling)
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
    window = read_maintenance_window(annotations.get(MAINTENANCE_WINDOW_ANNOTATION))
    read_values = (selector, partition, waves, window)
    notices.extend(read for read in read_values if isinstance(read, Notice))
    return Staging(
        paused=pause.paused,
        selector=selector if isinstance(selector, LabelSelector) else None,
        partition=partition if isinstance(partition, Count) else None,
        waves=waves if isinstance(waves, Waves) else None,
        window=window if isinstance(window, MaintenanceWindows) else None,
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
            return parse_label_selector(raw)
        except LabelSelectorError as error:
            problem = str(error)
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
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return f"{', '.join(repeated)} {'is' if len(repeated) == 1 else 'are'} named twice"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class WaveProgress:
    """The wave a rollout is at: `index` (from 0) of `count`, named `name`; `pending` of its
    Ready nodes still hold an old pod (0 once every wave is done, and while the pods of a new
    DaemonSet, all of the newest revision, start)."""

    index: int
    count: int
    name: str
    pending: int = 0

    def __str__(self) -> str:
        return f"{self.name} ({self.index + 1} of {self.count})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Holds:
    """The nodes a staged rollout holds, its wave, and the order it takes the others in.

    `rank` maps each node considered to its place in the rollout's order (a lower rank goes
    first); a node without a rank goes after every ranked one, by name."""

    held: Mapping[NodeName, Hold] = field(default_factory=dict)
    rank: Mapping[NodeName, int] = field(default_factory=dict)
    wave: WaveProgress | None = None
    paused: bool = False
    window_opens: datetime | None = None

    def order(self, name: NodeName) -> tuple[int, NodeName]:
        """The sort key of `name` in the rollout's order."""
        return (self.rank.get(name, len(self.rank)), name)


NOTHING_HELD = Holds()


def hold_nodes(
    staging: Staging,
    *,
    nodes: Collection[NodeName],
    labels: Callable[[NodeName], Mapping[str, str]],
    done: Callable[[NodeName], bool],
    ready: Callable[[NodeName], bool],
    outdated: Callable[[NodeName], bool],
) -> Holds:
    """The nodes `staging` holds among `nodes` (every node holding a pod of the DaemonSet, or
    whose pod's deletion is in flight).

    `labels(node)`: the node's labels (empty for a node not in the cache); `ready(node)`: whether
    its `Ready` condition is True; `done(node)`: whether a Ready node runs the newest revision and
    is available; `outdated(node)`: whether a Ready node still holds an old pod. Depends only on
    the arguments, not on the order of `nodes`."""
    if not staging.active:
        return NOTHING_HELD
    waves = staging.waves
    wave_of: dict[NodeName, int | None] = {}
    if waves is not None:
        wave_of = {name: waves.index_of(labels(name)) for name in nodes}
    last = len(waves.names) if waves is not None else 0

    def order(name: NodeName) -> tuple[int, NodeName]:
        index = wave_of.get(name)
        return (last if index is None else index, name)

    ordered = sorted(nodes, key=order)
    held: dict[NodeName, Hold] = {}
    selector = staging.selector
    if selector is not None:
        for name in ordered:
            if not selector.matches(labels(name)):
                held[name] = Hold(reason=HoldReason.SELECTOR)
    if waves is not None:
        for name in ordered:
            if wave_of[name] is None and name not in held:
                held[name] = Hold(reason=HoldReason.NOT_IN_WAVES)
    if staging.partition is not None:
        covered = [name for name in ordered if name not in held]
        # Rounds up (more nodes held, never fewer), at most every node covered.
        count = min(staging.partition.of(len(covered), rounding=Rounding.UP), len(covered))
        for name in covered[len(covered) - count :]:
            held[name] = Hold(reason=HoldReason.PARTITION)
    progress = None
    if waves is not None:
        current = _current_wave(ordered, wave_of, held, done=done, ready=ready, count=last)
        pending = sum(
            1
            for name in ordered
            if wave_of[name] == current and name not in held and ready(name) and outdated(name)
        )
        progress = WaveProgress(
            index=current, count=last, name=waves.names[current], pending=pending
        )
        for name in ordered:
            index = wave_of[name]
            if index is not None and index > current and name not in held:
                held[name] = Hold(reason=HoldReason.WAVE, wave=waves.names[index])
    if staging.only is not None:
        for name in ordered:
            if name not in staging.only and name not in held:
                held[name] = Hold(reason=HoldReason.NODE_DECIDES)
    if staging.paused or staging.invalid:
        reason = HoldReason.INVALID if staging.invalid else HoldReason.PAUSED
        held = {name: Hold(reason=reason) for name in ordered}
    elif staging.window_opens is not None:
        closed = Hold(reason=HoldReason.WINDOW, opens=staging.window_opens)
        held = {name: held.get(name, closed) for name in ordered}
    else:  # the last word: a node held for any other reason says that one
        for name in ordered:
            if name in staging.pulling and name not in held:
                held[name] = Hold(reason=HoldReason.PULLING)
    return Holds(
        held=held,
        rank={name: place for place, name in enumerate(ordered)},
        wave=progress,
        paused=staging.paused,
        window_opens=staging.window_opens,
    )


def _current_wave(
    ordered: list[NodeName],
    wave_of: Mapping[NodeName, int | None],
    held: Mapping[NodeName, Hold],
    *,
    done: Callable[[NodeName], bool],
    ready: Callable[[NodeName], bool],
    count: int,
) -> int:
    """The last wave started: the first wave with a Ready node the rollout must still upgrade
    (every wave before it is done), or the last wave when every wave is done."""
    for name in ordered:  # by wave, so the first node not done names the current wave
        index = wave_of[name]
        if index is None or name in held:
            continue
        if ready(name) and not done(name):
            return index
    return count - 1


def wave_started_notice(holds: Holds, *, revision: str | None) -> Notice | None:
    """The Normal `WaveStarted` Event for the current wave of a rollout to `revision`, when the
    wave has Ready nodes still to upgrade; once per wave and revision (None: no newest revision
    known, nothing to start)."""
    wave = holds.wave
    if (
        revision is None
        or wave is None
        or not wave.pending
        or holds.paused
        or holds.window_opens is not None
    ):
        return None
    return Notice(
        type=EventType.NORMAL,
        reason=WAVE_STARTED,
        message=(
            f"wave {wave.name} ({wave.index + 1} of {wave.count}) started: its nodes are "
            "upgraded now"
            + ("" if wave.index == 0 else ", every Ready node of the waves before it being done")
        ),
        subject=f"{revision}/{wave.index}/{wave.name}",
    )
