"""Which nodes a staged rollout holds back, and in what order it takes the others.

`hold_nodes` applies a DaemonSet's `Staging` (`spec.staging`, which says what the annotations
ask for) to its nodes at one moment: paused, held to a node selector, a partition or waves, a
closed maintenance window, waiting for a pre-pull, held by the node itself (its agent's hold,
design §13.6), or (OTA deadlines) not among the nodes the controller may upgrade. The rules, and
why, are in `spec.staging`'s docstring and design §12.
"""

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName
from edgerollout.domain.spec.count import Rounding
from edgerollout.domain.spec.staging import Batches, Staging, Waves
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    BATCH_STARTED,
    HELD_BY_BATCH,
    HELD_BY_INVALID_SETTING,
    HELD_BY_NODE_SELECTOR,
    HELD_BY_PARTITION,
    HELD_BY_PAUSE,
    HELD_BY_WAVE,
    HELD_BY_WINDOW,
    NOT_IN_WAVES,
    WAVE_STARTED,
)


class HoldReason(StrEnum):
    """Why a node is held; the value is how status and `plan` say it."""

    PAUSED = "paused"
    INVALID = "invalid setting"
    SELECTOR = "node selector"
    NOT_IN_WAVES = "in no wave"
    PARTITION = "partition"
    WAVE = "wave"
    BATCH = "batch"
    WINDOW = "maintenance window closed"
    NODE_DECIDES = "OTA: the node decides"
    PULLING = "waiting for its image pre-pull"
    NODE_ASKED = "node asked"


# The holds that stand until someone changes the staging; the others pass on their own (a wave's
# turn comes, a window opens, a pull ends) or are a pause's or an invalid value's, told apart.
STAGED_HOLDS = frozenset({HoldReason.SELECTOR, HoldReason.PARTITION, HoldReason.NOT_IN_WAVES})


@dataclass(frozen=True, slots=True, kw_only=True)
class Hold:
    """A node held back, and why; `wave` names the wave it waits for (reason WAVE), `batch` the
    batch it is in, from 1 (reason BATCH); `opens` when a closed window opens (WINDOW) or when
    the node's own hold ends (NODE_ASKED, with the node's words in `why`) or when the download
    window its pull waits for opens (PULLING)."""

    reason: HoldReason
    wave: str | None = None
    opens: datetime | None = None
    batch: int | None = None
    why: str = ""

    def __str__(self) -> str:
        if self.reason is HoldReason.NODE_ASKED and self.opens is not None:
            return f"{self.reason} until {format_rfc3339(self.opens)} ({self.why})"
        if self.reason is HoldReason.WAVE and self.wave is not None:
            return f"wave {self.wave}"
        if self.reason is HoldReason.BATCH and self.batch is not None:
            return f"batch {self.batch}"
        if self.reason is HoldReason.WINDOW and self.opens is not None:
            return f"{self.reason}, opens {format_rfc3339(self.opens)}"
        if self.reason is HoldReason.PULLING and self.opens is not None:
            return f"{self.reason}, download window opens {format_rfc3339(self.opens)}"
        return str(self.reason)

    @property
    def withholds_offer(self) -> bool:
        """Whether an OTA pod held so is told `PodNeedUpgrade=False`: not when its node holds it
        itself, which may still upgrade it when it chooses."""
        return self.reason is not HoldReason.NODE_ASKED

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
    HoldReason.BATCH: HELD_BY_BATCH,
    HoldReason.WINDOW: HELD_BY_WINDOW,
    HoldReason.NODE_DECIDES: "",
    HoldReason.PULLING: "",
    HoldReason.NODE_ASKED: "",
}


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
class BatchProgress:
    """The batch a rollout is at: `index` (from 0) of `count`, taking the first `target` of the
    `nodes` it covers in its order; `pending` of its Ready nodes still hold an old pod; `opens`:
    when the next batch starts, while this one soaks (None: not soaking)."""

    index: int
    count: int
    target: int
    nodes: int
    pending: int = 0
    opens: datetime | None = None

    def __str__(self) -> str:
        return f"{self.index + 1} of {self.count} ({self.target} of {self.nodes} nodes)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Holds:
    """The nodes a staged rollout holds, its wave, and the order it takes the others in.

    `rank` maps each node considered to its place in the rollout's order (a lower rank goes
    first); a node without a rank goes after every ranked one, by name. `by_name`: the order is
    the nodes' names (no waves), so a list sorted by name is in the rollout's order already."""

    held: Mapping[NodeName, Hold] = field(default_factory=dict)
    rank: Mapping[NodeName, int] = field(default_factory=dict)
    wave: WaveProgress | None = None
    batch: BatchProgress | None = None
    paused: bool = False
    window_opens: datetime | None = None
    by_name: bool = True

    def order(self, name: NodeName) -> tuple[int, NodeName]:
        """The sort key of `name` in the rollout's order."""
        return (self.rank.get(name, len(self.rank)), name)


NOTHING_HELD = Holds()
# The holds that say nothing but their reason, made once: a staged plan holds thousands of nodes.
_HOLDS = {reason: Hold(reason=reason) for reason in HoldReason}


@dataclass(frozen=True, slots=True)
class NodeSets:
    """What `ready`, `done` and `outdated` say of the nodes, as sets the caller keeps (a book):
    `open`, the Ready nodes not done; `outdated`, the Ready nodes holding an old pod. Given to
    `hold_nodes`, a plan with waves asks them a wave at a time, at C speed, instead of asking
    the callables node by node (most of a plan in the last waves at 10,000 nodes)."""

    open: set[NodeName] | frozenset[NodeName]
    outdated: set[NodeName] | frozenset[NodeName]


@dataclass(frozen=True, slots=True)
class WaveOrder:
    """Nodes in a staged rollout's order with waves: by wave, then by name.

    `ordered`: every node; `rank`: each one's place in it; `by_wave[i]`: the nodes of wave `i`,
    in order; `in_no_wave`: the others (last in `ordered`); `of`: each node's wave (None: in no
    wave; it may hold other nodes too). Made by a `WaveIndex`, shared by the plans until a node
    comes, goes or changes wave: nothing here is changed once made."""

    ordered: tuple[NodeName, ...]
    rank: Mapping[NodeName, int]
    by_wave: tuple[tuple[NodeName, ...], ...]
    in_no_wave: tuple[NodeName, ...]
    of: Mapping[NodeName, int | None]


class WaveIndex:
    """Each node's wave, read from its labels once, and the nodes' order by wave, kept from one
    plan to the next.

    Reading the wave of every node at each plan (one call for the labels and one for the wave per
    node) was about 60 % of `hold_nodes` with waves at 10,000 nodes, and sorting them by wave
    most of the rest (docs/scale.md). An index kept between plans reads only the nodes it has
    not seen or was told of, and sorts again only when a node came, went or changed wave:
    whoever keeps it (a `RolloutBook`) must `forget` every node that may have come, gone or been
    relabelled since the previous plan, as it is told of the nodes that changed. A change of the
    waves themselves starts it over."""

    def __init__(self) -> None:
        self._waves: Waves | None = None
        self._of: dict[NodeName, int | None] = {}
        self._members: set[NodeName] = set()
        self._told: set[NodeName] = set()
        self._order: WaveOrder | None = None

    def order(
        self,
        waves: Waves,
        nodes: Collection[NodeName],
        labels: Callable[[NodeName], Mapping[str, str]],
    ) -> WaveOrder:
        """`nodes` in the order of `waves` (see `WaveOrder`)."""
        if waves != self._waves:
            self._waves = waves
            self._of.clear()
            self._order = None
        of, members = self._of, self._members
        told, self._told = self._told, set()
        index_of = waves.index_of
        stale = self._order is None or len(nodes) != len(members)
        for name in told:
            if (name in nodes) != (name in members):
                stale = True
            if name in of:
                index = index_of(labels(name))
                if index != of[name]:
                    of[name] = index
                    stale = True
        if not stale and self._order is not None:
            return self._order
        self._members = members = set(nodes)
        for name in members.difference(of):
            of[name] = index_of(labels(name))
        last = len(waves.names)
        place = {name: _place(of[name], last) for name in members}
        # By name, at C speed; then by wave (a stable sort keeps the names' order within a
        # wave), keyed by a dict's own lookup: a key function called per node was most of a
        # plan with waves at 10,000 nodes.
        ordered = sorted(members)
        ordered.sort(key=place.__getitem__)
        by_wave: list[list[NodeName]] = [[] for _ in waves.names]
        in_no_wave: list[NodeName] = []
        for name in ordered:
            index = of[name]
            (in_no_wave if index is None else by_wave[index]).append(name)
        self._order = WaveOrder(
            ordered=tuple(ordered),
            rank={name: rank for rank, name in enumerate(ordered)},
            by_wave=tuple(tuple(wave) for wave in by_wave),
            in_no_wave=tuple(in_no_wave),
            of=of,
        )
        return self._order

    def forget(self, names: Iterable[NodeName]) -> None:
        """Look at these nodes again at the next plan: whether they are among the nodes, and
        their labels' wave."""
        self._told.update(names)


def hold_nodes(
    staging: Staging,
    *,
    nodes: Collection[NodeName],
    labels: Callable[[NodeName], Mapping[str, str]],
    done: Callable[[NodeName], bool],
    ready: Callable[[NodeName], bool],
    outdated: Callable[[NodeName], bool],
    done_since: Callable[[NodeName], datetime | None] = lambda name: None,
    now: datetime | None = None,
    wave_index: WaveIndex | None = None,
    sets: NodeSets | None = None,
) -> Holds:
    """The nodes `staging` holds among `nodes` (every node holding a pod of the DaemonSet, or
    whose pod's deletion is in flight).

    `labels(node)`: the node's labels (empty for a node not in the cache); `ready(node)`: whether
    its `Ready` condition is True; `done(node)`: whether a Ready node runs the newest revision and
    is available, and `done_since(node)` since when (None: unknown); `outdated(node)`: whether a
    Ready node still holds an old pod; `now`: the moment, for a batch's soak; `wave_index`: the
    nodes' waves as read at earlier plans (a fresh one if None; see `WaveIndex` for when it may
    be kept); `sets`: what `ready`, `done` and `outdated` say, as sets (see `NodeSets`), when the
    caller keeps them. Depends only on the arguments, not on the order of `nodes`.

    A node holding its own upgrade (`staging.asked`) holds no wave or batch back, as a node that
    is not Ready does not: it is held until its hold ends, and the others go on."""
    if not staging.active:
        return NOTHING_HELD
    asked = staging.asked
    if asked:
        ready = _not_asked(ready, asked)
    waves = staging.waves
    wave_of: Mapping[NodeName, int | None] = {}
    order = None
    if waves is not None:
        order = (wave_index or WaveIndex()).order(waves, nodes, labels)
        wave_of = order.of
        ordered: Sequence[NodeName] = order.ordered
    else:
        ordered = sorted(nodes)
    held: dict[NodeName, Hold] = {}
    selector = staging.selector
    if selector is not None:
        for name in ordered:
            if not selector.matches(labels(name)):
                held[name] = _HOLDS[HoldReason.SELECTOR]
            elif waves is not None and wave_of[name] is None:
                held[name] = _HOLDS[HoldReason.NOT_IN_WAVES]
    elif order is not None:
        held.update(dict.fromkeys(order.in_no_wave, _HOLDS[HoldReason.NOT_IN_WAVES]))
    if staging.partition is not None:
        covered = [name for name in ordered if name not in held]
        # Rounds up (more nodes held, never fewer), at most every node covered.
        count = min(staging.partition.of(len(covered), rounding=Rounding.UP), len(covered))
        for name in covered[len(covered) - count :]:
            held[name] = _HOLDS[HoldReason.PARTITION]
    progress = None
    if waves is not None and order is not None:
        progress = _hold_later_waves(
            waves,
            order,
            held,
            done=done,
            ready=ready,
            outdated=outdated,
            # Only nodes in no wave are held yet, and none holds its own upgrade: each wave's
            # nodes are all to be looked at, as the sets say.
            whole=sets if selector is None and staging.partition is None and not asked else None,
        )
    batch = None
    if staging.batches is not None:
        batch = _hold_later_batches(
            staging.batches,
            [name for name in ordered if name not in held],
            held,
            done=done,
            ready=ready,
            outdated=outdated,
            done_since=done_since,
            now=now,
        )
    for name in staging.first:
        # After a rollback its broken nodes wait for no wave or batch: they go first.
        hold = held.get(name)
        if hold is not None and hold.reason in (HoldReason.WAVE, HoldReason.BATCH):
            del held[name]
    for name in ordered if asked else ():
        request = asked.get(name)
        if request is not None and name not in held:
            held[name] = Hold(
                reason=HoldReason.NODE_ASKED,
                opens=request.ends(staging.max_hold),
                why=request.why,
            )
    if staging.only is not None:
        for name in ordered:
            if name not in staging.only and name not in held:
                held[name] = _HOLDS[HoldReason.NODE_DECIDES]
    held = _overriding_holds(staging, ordered, held)
    first = staging.first
    if first:
        # After a rollback its broken nodes go first (a stable sort: the rest keep their order).
        ordered = sorted(ordered, key=lambda name: name not in first)
    return Holds(
        held=held,
        rank=(
            order.rank
            if order is not None and not first
            else {name: place for place, name in enumerate(ordered)}
        ),
        wave=progress,
        batch=batch,
        by_name=waves is None and not first,
        paused=staging.paused,
        window_opens=staging.window_opens,
    )


def _not_asked(
    ready: Callable[[NodeName], bool], asked: Mapping[NodeName, object]
) -> Callable[[NodeName], bool]:
    """`ready`, but False for a node holding its own upgrade."""
    return lambda name: name not in asked and ready(name)


def _hold_later_waves(
    waves: Waves,
    order: WaveOrder,
    held: dict[NodeName, Hold],
    *,
    done: Callable[[NodeName], bool],
    ready: Callable[[NodeName], bool],
    outdated: Callable[[NodeName], bool],
    whole: NodeSets | None,
) -> WaveProgress:
    """Hold the nodes of the waves after the current one (in `held`), and say where it is.
    `whole`: no node of a wave is held yet or holds its own upgrade, and these sets say what
    the callables do (the waves are then looked at a wave at a time, at C speed)."""
    names = order.by_wave
    last = len(names)
    wave_names = waves.names
    current = _current_wave(order, held, done=done, ready=ready, count=last, whole=whole)
    pending = 0
    for index in range(current, last):
        wave = names[index]
        if index > current:
            hold = Hold(reason=HoldReason.WAVE, wave=wave_names[index])
            if whole is not None:
                held.update(dict.fromkeys(wave, hold))
            else:
                held.update({name: hold for name in wave if name not in held})
        elif whole is not None:
            pending = len(whole.outdated.intersection(wave))
        else:
            pending = sum(1 for name in wave if name not in held and ready(name) and outdated(name))
    return WaveProgress(index=current, count=last, name=wave_names[current], pending=pending)


def _place(index: int | None, last: int) -> int:
    return last if index is None else index


def _hold_later_batches(
    batches: Batches,
    covered: Sequence[NodeName],
    held: dict[NodeName, Hold],
    *,
    done: Callable[[NodeName], bool],
    ready: Callable[[NodeName], bool],
    outdated: Callable[[NodeName], bool],
    done_since: Callable[[NodeName], datetime | None],
    now: datetime | None,
) -> BatchProgress:
    """Hold the nodes after the current batch (in `held`), and say where it is.

    `covered`: the nodes the selector and the partition leave in, in the rollout's order. The
    current batch is the one holding the first Ready node not done (the last when every one is);
    while the batch before it soaks, that one is current still."""
    count = len(covered)
    ends: list[int] = []
    for target in batches.targets:
        end = min(max(target.of(count, rounding=Rounding.UP), ends[-1] if ends else 0), count)
        ends.append(end)
    if not ends or ends[-1] < count:
        ends.append(count)
    first_open = next(
        (place for place, name in enumerate(covered) if ready(name) and not done(name)), count
    )
    current = next((i for i, end in enumerate(ends) if end > first_open), len(ends) - 1)
    opens = None
    if current > 0 and batches.soak > timedelta(0) and now is not None:
        times = [done_since(name) for name in covered[: ends[current - 1]] if ready(name)]
        finished = max((t for t in times if t is not None), default=None)
        if finished is not None and now < finished + batches.soak:
            current -= 1
            opens = finished + batches.soak
    start = 0
    for index, end in enumerate(ends):
        if index > current:
            for name in covered[start:end]:
                if name not in held:
                    held[name] = Hold(reason=HoldReason.BATCH, batch=index + 1)
        start = end
    pending = sum(
        1
        for name in covered[: ends[current]]
        if name not in held and ready(name) and outdated(name)
    )
    return BatchProgress(
        index=current,
        count=len(ends),
        target=ends[current],
        nodes=count,
        pending=pending,
        opens=opens,
    )


def _overriding_holds(
    staging: Staging, ordered: Sequence[NodeName], held: dict[NodeName, Hold]
) -> dict[NodeName, Hold]:
    """The holds once what overrides the others is applied: a pause or an invalid value holds
    every node for that reason; a closed window every node not held for another; a pre-pull
    waited for is the last word (a node held for any other reason says that one)."""
    if staging.paused or staging.invalid:
        reason = HoldReason.INVALID if staging.invalid else HoldReason.PAUSED
        hold = _HOLDS[reason]
        return dict.fromkeys(ordered, hold)
    if staging.window_opens is not None:
        closed = Hold(reason=HoldReason.WINDOW, opens=staging.window_opens)
        return {name: held.get(name, closed) for name in ordered}
    for name in ordered if staging.pulling else ():
        if name in staging.pulling and name not in held:
            held[name] = (
                Hold(reason=HoldReason.PULLING, opens=staging.pull_opens)
                if name in staging.pull_window
                else _HOLDS[HoldReason.PULLING]
            )
    return held


def _current_wave(
    order: WaveOrder,
    held: Mapping[NodeName, Hold],
    *,
    done: Callable[[NodeName], bool],
    ready: Callable[[NodeName], bool],
    count: int,
    whole: NodeSets | None,
) -> int:
    """The last wave started: the first wave with a Ready node the rollout must still upgrade
    (every wave before it is done), or the last wave when every wave is done."""
    for index, wave in enumerate(order.by_wave):
        if whole is not None:
            if not whole.open.isdisjoint(wave):
                return index
            continue
        for name in wave:
            if name not in held and ready(name) and not done(name):
                return index
    return count - 1


def wave_started_notice(holds: Holds, *, revision: str | None) -> Notice | None:
    """The Normal `WaveStarted` Event for the current wave of a rollout to `revision`, when the
    wave has Ready nodes still to upgrade; once per wave and revision (None: no newest revision
    known, nothing to start)."""
    wave = holds.wave
    if revision is None or wave is None or not _starting(holds, wave.pending):
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


def batch_started_notice(holds: Holds, *, revision: str | None) -> Notice | None:
    """The Normal `BatchStarted` Event for the current batch of a rollout to `revision`, when the
    batch has Ready nodes still to upgrade; once per batch and revision."""
    batch = holds.batch
    if revision is None or batch is None or not _starting(holds, batch.pending):
        return None
    return Notice(
        type=EventType.NORMAL,
        reason=BATCH_STARTED,
        message=(
            f"batch {batch.index + 1} of {batch.count} started: up to {batch.target} of the "
            f"{batch.nodes} nodes of the rollout run the newest revision"
            + ("" if batch.index == 0 else ", every Ready node of the batches before done")
        ),
        subject=f"{revision}/batch/{batch.index}",
    )


def _starting(holds: Holds, pending: int) -> bool:
    """Whether a wave or a batch with `pending` Ready nodes to upgrade starts now: not while the
    rollout is paused or its maintenance window closed."""
    return bool(pending) and not holds.paused and holds.window_opens is None
