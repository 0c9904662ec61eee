"""Which revision is the newest, and whether a pod runs it: the one place that decides.

The newest revision is the DaemonSet's ControllerRevision with the highest `.revision`; its
`controller-revision-hash` label is what pods carry (design §3). The native controller keeps one
revision per distinct template and renumbers a revision when a rollback makes it current again,
so the highest number is the template the DaemonSet has now.

A pod is current when its `controller-revision-hash` equals the newest hash. When either hash is
missing, the decision falls back to the pod's `pod-template-generation` label against the
DaemonSet's `deprecated.daemonset.template.generation` annotation. Where the hashes are both known
they alone decide: the generation is bumped on every template change, including a rollback to an
old template whose pods are, by hash, already current.

A pod is current only when that is proven; a pod that cannot be compared at all is outdated
(upstream does the same: neither of its matches holds). That is safe only while the *newest* side
is known, which is why `TargetRevision.known` exists: when the cache holds no usable
ControllerRevision and the DaemonSet has no template generation either, nothing can be proven
outdated, and the callers plan nothing rather than delete pods whose replacements would be just as
undecidable.

Ties on `.revision` between different hashes should not exist (the native controller
de-duplicates them); if the cache shows one anyway, the newest hash is unknown and the generation
decides, rather than one of the two being picked by name.

The DaemonSet and its ControllerRevisions come from two watches, which are not ordered with each
other: a cache can show the revision made for a new template before the DaemonSet that has it,
and so before any annotation changed with or before that template. A plan from the two would
roll out the new revision under the old annotations (pre-pull off, another budget, a pause not
seen yet). `daemonset_behind` tells that case from the revisions alone: the DaemonSet controller
copies the DaemonSet's annotations, its template generation among them, onto each revision it
makes, so the newest revision names the generation it was made for. The DaemonSet read is behind
when that generation is newer than the DaemonSet's, or — a rollback renumbers an older revision,
which keeps its older generation — when another revision was made for exactly the DaemonSet's
generation (the template the DaemonSet read still has) and is not the newest. The controller then
waits for the DaemonSet's own event (design §10.1).
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from edgerollout.domain.model import PodView, RevisionView
from edgerollout.domain.vocabulary import TEMPLATE_GENERATION_ANNOTATION

_GENERATION = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetRevision:
    """What a current pod looks like: the newest revision hash and/or the template generation."""

    hash: str | None
    template_generation: int | None

    @property
    def known(self) -> bool:
        """Whether any pod can be proven current or outdated against this target."""
        return self.hash is not None or self.template_generation is not None


def parse_template_generation(raw: str | None) -> int | None:
    """A `pod-template-generation` label or `deprecated.daemonset.template.generation` value.

    Decimal digits only (as the API server writes them); anything else is unknown (None) rather
    than an error, because these values are written by Kubernetes, not by users.
    """
    if raw is None or _GENERATION.fullmatch(raw) is None:
        return None
    return int(raw)


def newest_revision(revisions: Iterable[RevisionView]) -> RevisionView | None:
    """The revision with the highest `.revision`; None if there is none or the highest is a tie.

    Several entries with the same number and the same hash are one revision seen twice, not a tie.
    """
    newest: RevisionView | None = None
    tied = False
    for revision in revisions:
        if newest is None or revision.revision > newest.revision:
            newest, tied = revision, False
        elif revision.revision == newest.revision and revision.hash != newest.hash:
            tied = True
    return None if tied else newest


def target_revision(
    *, annotations: Mapping[str, str], revisions: Iterable[RevisionView]
) -> TargetRevision:
    """The target pods are compared with, from the DaemonSet's annotations and revisions."""
    newest = newest_revision(revisions)
    newest_hash = newest.hash if newest is not None else None
    return TargetRevision(
        hash=newest_hash or None,
        template_generation=parse_template_generation(
            annotations.get(TEMPLATE_GENERATION_ANNOTATION)
        ),
    )


def daemonset_behind(*, annotations: Mapping[str, str], revisions: Iterable[RevisionView]) -> bool:
    """Whether the DaemonSet read (its `annotations`) is older than its newest revision among
    `revisions` (see the module docstring); False when either generation is not known."""
    generation = parse_template_generation(annotations.get(TEMPLATE_GENERATION_ANNOTATION))
    listed = list(revisions)
    newest = newest_revision(listed)
    if generation is None or newest is None or newest.template_generation is None:
        return False
    if newest.template_generation > generation:
        return True
    return newest.template_generation < generation and any(
        revision.template_generation == generation and revision.hash != newest.hash
        for revision in listed
    )


def is_current(pod: PodView, target: TargetRevision) -> bool:
    """Whether `pod` provably runs the newest revision (see the module docstring)."""
    if target.hash and pod.revision_hash:
        return pod.revision_hash == target.hash
    if target.template_generation is not None and pod.template_generation is not None:
        return pod.template_generation == target.template_generation
    return False
