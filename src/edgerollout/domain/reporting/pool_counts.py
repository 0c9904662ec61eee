"""A rollout's nodes counted by node pool: where the rollout stands pool by pool.

An edge fleet is run by pool (a shop chain's region, a factory, a base-station cluster): the
question during an upgrade is which pools are done, which wait for offline nodes, which broke.
`counts_by_pool` counts each node of the DaemonSet's book as `RolloutCounts` does (design §9.1),
grouped by the value of the pool label of its node: the label its waves are named by
(`edgerollout.io/wave-label`), else OpenYurt's `apps.openyurt.io/nodepool`. A node without the
label is in the pool named "" (no pool). Nodes the native controller wants a pod on that hold none
belong to no pool and are not counted here (the DaemonSet's own counts have them as remaining).

It reads every node, so it is not computed after each plan but when asked: the controller's
metrics endpoint asks at each scrape (`edgerollout_daemonset_pool_nodes`).
"""

from collections.abc import Callable, Mapping

from edgerollout.domain.model import NodeName
from edgerollout.domain.planning.holds import Hold
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import HOLDING_AN_OLD_POD, NodeVerdict
from edgerollout.domain.reporting.rollout_phase import RolloutCounts
from edgerollout.domain.spec.staging import read_staging
from edgerollout.domain.vocabulary import NODEPOOL_LABEL

POOL_STATES = ("total", "updated", "offline", "broken", "held", "remaining")


def pool_label(annotations: Mapping[str, str]) -> str:
    """The node label that names a node's pool for a DaemonSet with these annotations."""
    waves = read_staging(annotations).waves
    return NODEPOOL_LABEL if waves is None else waves.label


def counts_by_pool(
    book: RolloutBook,
    *,
    held: Mapping[NodeName, Hold],
    pool_of: Callable[[NodeName], str],
) -> dict[str, RolloutCounts]:
    """The book's nodes counted by pool (`held`: the last plan's holds; `pool_of`: a node's
    pool), as a dict of pool → counts, pools in name order."""
    tallies: dict[str, list[int]] = {}
    for name, verdict in book.verdicts.items():
        _count(tallies, pool_of(name), _state_of(verdict, held=name in held))
    for name in book.not_ready:
        _count(tallies, pool_of(name), _UPDATED if book.runs_newest(name) else _OFFLINE)
    return {
        pool: RolloutCounts(
            total=sum(tally),
            updated=tally[_UPDATED],
            offline=tally[_OFFLINE],
            broken=tally[_BROKEN],
            held=tally[_HELD],
            remaining=tally[_REMAINING],
        )
        for pool, tally in sorted(tallies.items())
    }


_UPDATED, _OFFLINE, _BROKEN, _HELD, _REMAINING = range(5)


def _state_of(verdict: NodeVerdict, *, held: bool) -> int:
    if verdict is NodeVerdict.UP_TO_DATE:
        return _UPDATED
    if verdict is NodeVerdict.BROKEN:
        return _BROKEN
    if held and verdict in HOLDING_AN_OLD_POD:
        return _HELD
    return _REMAINING


def _count(tallies: dict[str, list[int]], pool: str, state: int) -> None:
    tally = tallies.get(pool)
    if tally is None:
        tally = tallies[pool] = [0] * 5
    tally[state] += 1
