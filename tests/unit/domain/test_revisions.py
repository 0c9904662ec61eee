"""The newest revision, and whether a pod is current (design §3)."""

import pytest

from edgerollout.domain.model import RevisionView
from edgerollout.domain.planning.revisions import (
    TargetRevision,
    daemonset_behind,
    is_current,
    newest_revision,
    parse_template_generation,
    target_revision,
)
from edgerollout.domain.vocabulary import TEMPLATE_GENERATION_ANNOTATION

from .builders import NEW, OLD, pod, revision


@pytest.mark.parametrize(
    ("revisions", "newest"),
    [
        pytest.param([], None, id="no-revision"),
        pytest.param([revision("ds-a", 1, "a")], revision("ds-a", 1, "a"), id="single"),
        pytest.param(
            [revision("ds-a", 1, "a"), revision("ds-c", 3, "c"), revision("ds-b", 2, "b")],
            revision("ds-c", 3, "c"),
            id="highest-number-wins-whatever-the-order",
        ),
        pytest.param(
            [revision("ds-a", 10, "a"), revision("ds-b", 9, "b")],
            revision("ds-a", 10, "a"),
            id="numbers-compare-as-numbers",
        ),
        pytest.param(
            [revision("ds-b", 2, "b"), revision("ds-c", 2, "c")],
            None,
            id="tie-between-hashes-is-unknown",
        ),
        pytest.param(
            [revision("ds-b", 2, "b"), revision("ds-b", 2, "b")],
            revision("ds-b", 2, "b"),
            id="same-revision-seen-twice-is-no-tie",
        ),
        pytest.param(
            [revision("ds-a", 1, "a"), revision("ds-b", 1, "b"), revision("ds-c", 2, "c")],
            revision("ds-c", 2, "c"),
            id="tie-below-the-newest-does-not-matter",
        ),
        pytest.param(
            [revision("ds-c", 2, "c"), revision("ds-a", 1, "a"), revision("ds-b", 1, "b")],
            revision("ds-c", 2, "c"),
            id="tie-below-the-newest-seen-after-it",
        ),
    ],
)
def test_newest_revision_is_the_highest_number(
    revisions: list[RevisionView], newest: RevisionView | None
) -> None:
    assert newest_revision(revisions) == newest


@pytest.mark.parametrize(
    ("annotations", "revisions", "target"),
    [
        pytest.param(
            {"deprecated.daemonset.template.generation": "7"},
            [revision("ds-old", 1, OLD), revision("ds-new", 2, NEW)],
            TargetRevision(hash=NEW, template_generation=7),
            id="hash-and-generation",
        ),
        pytest.param(
            {},
            [revision("ds-new", 2, NEW)],
            TargetRevision(hash=NEW, template_generation=None),
            id="no-generation-annotation",
        ),
        pytest.param(
            {"deprecated.daemonset.template.generation": "seven"},
            [],
            TargetRevision(hash=None, template_generation=None),
            id="nothing-usable",
        ),
        pytest.param(
            {"deprecated.daemonset.template.generation": "3"},
            [revision("ds-new", 2, None)],
            TargetRevision(hash=None, template_generation=3),
            id="newest-revision-without-hash-label",
        ),
        pytest.param(
            {},
            [revision("ds-new", 2, "")],
            TargetRevision(hash=None, template_generation=None),
            id="empty-hash-label-is-no-hash",
        ),
    ],
)
def test_target_combines_newest_hash_and_template_generation(
    annotations: dict[str, str], revisions: list[RevisionView], target: TargetRevision
) -> None:
    assert target_revision(annotations=annotations, revisions=revisions) == target


@pytest.mark.parametrize(
    ("raw", "generation"),
    [
        pytest.param("3", 3, id="digits"),
        pytest.param("03", 3, id="leading-zero"),
        pytest.param(None, None, id="absent"),
        pytest.param("", None, id="empty"),
        pytest.param("-3", None, id="negative"),
        pytest.param("+3", None, id="plus"),
        pytest.param(" 3", None, id="space"),
        pytest.param("3.0", None, id="decimal"),
        pytest.param("9" * 40, None, id="absurdly-long"),
    ],
)
def test_template_generation_is_decimal_digits_only(
    raw: str | None, generation: int | None
) -> None:
    assert parse_template_generation(raw) == generation


BOTH = TargetRevision(hash=NEW, template_generation=5)
HASH_ONLY = TargetRevision(hash=NEW, template_generation=None)
GENERATION_ONLY = TargetRevision(hash=None, template_generation=5)
NOTHING = TargetRevision(hash=None, template_generation=None)


@pytest.mark.parametrize(
    ("pod_hash", "pod_generation", "target", "current"),
    [
        pytest.param(NEW, 5, BOTH, True, id="hash-and-generation-match"),
        pytest.param(NEW, 4, BOTH, True, id="matching-hash-decides-over-generation"),
        pytest.param(OLD, 5, BOTH, False, id="different-hash-decides-over-generation"),
        pytest.param(NEW, None, HASH_ONLY, True, id="hash-match"),
        pytest.param(OLD, None, HASH_ONLY, False, id="hash-mismatch"),
        pytest.param(None, 5, BOTH, True, id="pod-without-hash-falls-back-to-generation"),
        pytest.param(None, 4, BOTH, False, id="pod-without-hash-older-generation"),
        pytest.param("", 5, BOTH, True, id="empty-hash-label-falls-back"),
        pytest.param(NEW, 5, GENERATION_ONLY, True, id="unknown-newest-hash-falls-back"),
        pytest.param(OLD, 4, GENERATION_ONLY, False, id="unknown-newest-hash-older-generation"),
        pytest.param(None, None, BOTH, False, id="pod-without-labels-is-not-current"),
        pytest.param(None, 5, HASH_ONLY, False, id="nothing-comparable-is-not-current"),
        pytest.param(NEW, 5, NOTHING, False, id="unknown-target-proves-nothing"),
    ],
)
def test_pod_is_current_only_when_provably_on_the_newest_revision(
    pod_hash: str | None, pod_generation: int | None, target: TargetRevision, current: bool
) -> None:
    subject = pod("p", "edge-1", revision=pod_hash, generation=pod_generation)
    assert is_current(subject, target) is current


@pytest.mark.parametrize(
    ("target", "known"),
    [(BOTH, True), (HASH_ONLY, True), (GENERATION_ONLY, True), (NOTHING, False)],
    ids=["both", "hash-only", "generation-only", "nothing"],
)
def test_target_is_known_with_a_hash_or_a_generation(target: TargetRevision, known: bool) -> None:
    assert target.known is known


def at_generation(generation: int) -> dict[str, str]:
    """A DaemonSet's annotations at that template generation."""
    return {TEMPLATE_GENERATION_ANNOTATION: str(generation)}


@pytest.mark.parametrize(
    ("generation", "revisions", "behind"),
    [
        pytest.param(
            2,
            [revision("ds-a", 1, "a", generation=1), revision("ds-b", 2, "b", generation=2)],
            False,
            id="newest-made-for-this-generation",
        ),
        pytest.param(
            2,
            [
                revision("ds-a", 1, "a", generation=1),
                revision("ds-b", 2, "b", generation=2),
                revision("ds-c", 3, "c", generation=3),
            ],
            True,
            id="newest-made-for-a-later-generation",
        ),
        pytest.param(
            3,
            [revision("ds-a", 1, "a", generation=1), revision("ds-b", 2, "b", generation=2)],
            False,
            id="its-revision-not-seen-yet-is-no-stale-daemonset",
        ),
        pytest.param(
            3,
            [revision("ds-a", 3, "a", generation=1), revision("ds-b", 2, "b", generation=2)],
            False,
            id="rolled-back-an-older-revision-renumbered",
        ),
        pytest.param(
            2,
            [revision("ds-a", 3, "a", generation=1), revision("ds-b", 2, "b", generation=2)],
            True,
            id="rollback-seen-before-the-daemonset-that-asked-for-it",
        ),
        pytest.param(
            2,
            [revision("ds-a", 1, "a"), revision("ds-b", 2, "b")],
            False,
            id="revisions-without-a-generation",
        ),
        pytest.param(None, [revision("ds-b", 2, "b", generation=9)], False, id="no-generation"),
        pytest.param(2, [], False, id="no-revision"),
    ],
)
def test_a_daemonset_read_before_its_newest_revision_is_behind(
    generation: int | None, revisions: list[RevisionView], behind: bool
) -> None:
    annotations = {} if generation is None else at_generation(generation)
    assert daemonset_behind(annotations=annotations, revisions=revisions) is behind
