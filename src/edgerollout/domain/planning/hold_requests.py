"""Whether a node may hold, or lift the hold on, one of its pods, and the condition that says so.

The agent's `hold` verb (design §8.4) takes a hold for a pod of its node until a time, with a
reason; `DELETE` of the same route lifts it. Before it writes anything the agent asks, in this
order, and the first "no" is the answer (with the same body as every refusal, design §8.2):

| question                                                 | refusal            | code |
|----------------------------------------------------------|--------------------|------|
| are the namespace and pod names valid DNS names?         | `InvalidName`      | 400  |
| does the pod exist?                                      | `PodNotFound`      | 404  |
| is it bound to this node?                                | `PodOnAnotherNode` | 403  |
| is it still running (not terminating)?                   | `PodTerminating`   | 409  |
| is it owned by a DaemonSet edgerollout rolls out?        | `NotOptedIn`       | 400  |
| hold only: does the body say until when and why?         | `InvalidHold`      | 400  |
| hold only: can its DaemonSet's max-hold be read?         | `InvalidMaxHold`   | 409  |
| hold only: does it end within max-hold of when asked?    | `HoldTooLong`      | 400  |

The pod comes before the body, as for `upgrade`: a request about a pod that is not this node's
to hold is refused for that, whatever else it says.

The body is JSON: `{"until": "<RFC 3339 time>", "reason": "<words>"}` or, instead of `until`,
`"for": "<Go duration>"` (`"2h"`, `"90m"`) counted from now. The end must be in the future and the
reason one to `LONGEST_REASON` printable characters.

A hold asked while another stands keeps the first one's asked-at time (max-hold counts from it),
so a node can move its end but not push it past max-hold; once a hold has ended, lapsed or been
lifted, a new one counts from now. A pause does not refuse a hold (it changes nothing that runs,
and a node that could not hold while paused would be upgraded the moment the rollout resumes),
and neither does the lack of an upgrade: a node may hold before a new revision comes. Lifting a
pod that is not held changes nothing and succeeds, as asking for a pre-pull twice does.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from edgerollout.domain.events import Notice, shown
from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.planning.ota_requests import PodFacts, Refusal
from edgerollout.domain.spec.bounds import SHORT
from edgerollout.domain.spec.go_duration import GoDurationError, parse_go_duration
from edgerollout.domain.spec.node_hold import LONGEST_REASON, hold_message, read_hold, read_max_hold
from edgerollout.domain.timestamps import format_rfc3339, parse_rfc3339
from edgerollout.domain.vocabulary import (
    HOLD_LIFTED,
    HOLD_TOO_LONG,
    INVALID_MAX_HOLD,
    MALFORMED_HOLD,
    MAX_HOLD_ANNOTATION,
    NODE_ASKED,
    NOT_OPTED_IN,
    UPGRADE_HELD,
)

_FIELDS = frozenset({"until", "for", "reason"})


@dataclass(frozen=True, slots=True, kw_only=True)
class AskedFor:
    """What a node asked for: a hold until `until`, for `why`."""

    until: datetime
    why: str


def read_hold_body(body: object, *, now: datetime) -> AskedFor | Refusal:
    """The hold a request's JSON body asks for (see the module docstring), or why it is refused."""
    expected = (
        'expected a JSON object such as {"until": "2026-11-29T18:00:00Z", "reason": "a car '
        'driving"} or {"for": "2h", "reason": "shop open"}'
    )
    if not isinstance(body, Mapping):
        return _invalid(f"the body is not a JSON object; {expected}")
    unknown = sorted(str(key) for key in body if key not in _FIELDS)
    if unknown:
        return _invalid(f"unknown field {', '.join(unknown)}; {expected}")
    if ("until" in body) == ("for" in body):
        return _invalid(f'give either "until" or "for", not both or neither; {expected}')
    until = _until(body, now=now)
    if isinstance(until, Refusal):
        return until
    if until <= now:
        return _invalid(f"the hold ends at {format_rfc3339(until)}, which is not in the future")
    why = body.get("reason")
    if not isinstance(why, str) or not why.strip():
        return _invalid(f'"reason" must say why, in a few words; {expected}')
    if len(why) > LONGEST_REASON or not why.isprintable():
        return _invalid(
            f'"reason" must be at most {LONGEST_REASON} printable characters, without control '
            "characters or line breaks"
        )
    return AskedFor(until=until, why=why.strip())


def _until(body: Mapping[str, object], *, now: datetime) -> datetime | Refusal:
    if "until" in body:
        raw = body["until"]
        if isinstance(raw, str) and len(raw) <= SHORT:
            try:
                return parse_rfc3339(raw)
            except ValueError:
                pass
        return _invalid(
            f'"until" is {_shown(raw)}, not an RFC 3339 time such as "2026-11-29T18:00:00Z"'
        )
    raw = body["for"]
    if isinstance(raw, str) and len(raw) <= SHORT:
        try:
            nanoseconds = parse_go_duration(raw.strip())
        except GoDurationError:
            nanoseconds = 0
        if nanoseconds > 0:
            return now + timedelta(microseconds=-(-nanoseconds // 1000))
    return _invalid(f'"for" is {_shown(raw)}, not a Go duration longer than zero such as "2h"')


def _shown(raw: object) -> str:
    text = repr(raw)
    return text if len(text) <= 80 else f"{text[:80]}..."


def _invalid(message: str) -> Refusal:
    return Refusal(400, MALFORMED_HOLD, message)


def not_opted_in(pod: PodFacts, why: str) -> Refusal:
    """400 `NotOptedIn`: the pod's owner is not a DaemonSet edgerollout rolls out (`why`)."""
    return Refusal(
        400,
        NOT_OPTED_IN,
        f"pod {pod.namespace}/{pod.name} {why}, so edgerollout does not upgrade it and there is "
        "nothing to hold",
    )


def hold_condition(
    pod: PodFacts, asked_for: AskedFor, *, annotations: Mapping[str, str], now: datetime
) -> Condition | Refusal:
    """The `UpgradeHeld=True` condition to write for `asked_for` on `pod`, whose DaemonSet has
    `annotations`, or why it is refused (max-hold unreadable, or too short for the hold)."""
    raw = annotations.get(MAX_HOLD_ANNOTATION)
    ref = f"{pod.namespace}/{pod.name}"
    if raw is not None and len(raw) > SHORT:
        max_hold: timedelta | Notice | None = None
        seen = f"a value {len(raw)} characters long, more than the {SHORT} read"
    else:
        max_hold = read_max_hold(raw)
        seen = f'"{shown(str(raw))}", which is not a Go duration longer than zero'
    if not isinstance(max_hold, timedelta):
        return Refusal(
            409,
            INVALID_MAX_HOLD,
            f"the DaemonSet {pod.namespace}/{pod.owner_name} of pod {ref} sets "
            f"{MAX_HOLD_ANNOTATION} to {seen}: how long a hold may last is not known, so none "
            "is taken until it is fixed",
        )
    standing = read_hold(pod.conditions)
    asked = now
    if standing is not None and now < standing.ends(max_hold):
        asked = standing.asked
    latest = asked + max_hold
    if asked_for.until > latest:
        since = "now" if asked == now else f"the hold standing since {format_rfc3339(asked)}"
        return Refusal(
            400,
            HOLD_TOO_LONG,
            f"a hold of pod {ref} until {format_rfc3339(asked_for.until)} is longer than "
            f"{MAX_HOLD_ANNOTATION} allows: at most until {format_rfc3339(latest)} "
            f"(max-hold counted from {since})",
        )
    return Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.TRUE,
        reason=NODE_ASKED,
        message=hold_message(until=asked_for.until, asked=asked, why=asked_for.why),
        last_transition_time=format_rfc3339(asked),
    )


def lift_condition(pod: PodFacts, *, now: datetime) -> Condition | None:
    """The `UpgradeHeld=False` condition that lifts `pod`'s hold; None when it holds none."""
    standing = pod.conditions.get(UPGRADE_HELD)
    if standing is None or standing.status is not ConditionStatus.TRUE:
        return None
    moment = format_rfc3339(now)
    return Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.FALSE,
        reason=HOLD_LIFTED,
        message=f"lifted at {moment}",
        last_transition_time=moment,
    )
