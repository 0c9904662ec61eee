"""Every default and tuning constant of edgerollout, each named once with its reason.

Like controller-runtime's `Options` or kopf's `OperatorSettings`: each process runs with one
settings object, `ControllerSettings` or `AgentSettings`, whose fields are named as its flags are.
The command line builds it once, a changed copy of the defaults `CONTROLLER` or `AGENT`
(`dataclasses.replace`), and passes it down; the defaults themselves are frozen. The flags take
their defaults from here, the Helm chart's values and the manifests in `deploy/base` are checked
against them by a unit test, and the code that uses a value reads it from its process's settings
rather than spelling the number again. Both processes talk to the API server as `KUBE_CLIENT`
says; `edgerollout status` polls as `STATUS` says, `list --watch` settles as `LIST` says. A
server's address is an `Address`, which its flag parses from `HOST:PORT` before anything starts.

This module imports nothing from the project, so every layer (domain included) may read it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

LogFormat = Literal["text", "json"]
LogLevel = Literal["debug", "info", "warning", "error"]
AgentAuth = Literal["token", "none"]
AGENT_AUTH_MODES: Final[tuple[AgentAuth, ...]] = ("token", "none")
LOG_FORMATS: Final[tuple[LogFormat, ...]] = ("text", "json")
LOG_LEVELS: Final[tuple[LogLevel, ...]] = ("debug", "info", "warning", "error")

# What an address flag expects, as its errors say it.
ADDRESS_FORM: Final = "HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080"
# A host name as DNS spells it (RFC 1123 labels, dot-separated); an IPv4 address is one too.
_HOST_NAME: Final = re.compile(
    r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?"
)
# TCP's largest port. The smallest, 0, asks the kernel for any free one: every address flag is an
# address to serve on, where that means something (a test's server), so 0 is valid.
MAX_PORT: Final = 65535


@dataclass(frozen=True, slots=True)
class Address:
    """Where a server listens: a host (a name, an IPv4 address, or an IPv6 address without its
    brackets) and a port. Written `HOST:PORT`, an IPv6 host in brackets: `[::1]:8080`."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> Address:
        """The address `text` writes, or ValueError naming `text`, what is wrong with it and the
        form expected."""
        host, port = _host_and_port(text)
        if host.startswith("["):
            host = host[1:-1]
            if not _is_ipv6(host):
                raise _not_an_address(text, f"{host!r} is not an IPv6 address")
        elif _is_ipv6(host):
            raise _not_an_address(text, f"an IPv6 host goes in brackets ([{host}]:{port})")
        elif not _HOST_NAME.fullmatch(host):
            raise _not_an_address(text, f"{host!r} is not a host name or an IP address")
        if not (port.isascii() and port.isdigit()):
            raise _not_an_address(text, f"the port {port!r} is not a number")
        if int(port) > MAX_PORT:
            raise _not_an_address(text, f"the port {int(port)} is above {MAX_PORT}")
        return cls(host, int(port))


def _host_and_port(text: str) -> tuple[str, str]:
    """`text`'s host (an IPv6 one still in its brackets) and port, neither empty."""
    if not text:
        raise _not_an_address(text, "empty")
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise _not_an_address(text, "the IPv6 host's bracket is not closed")
        host, rest = text[: end + 1], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise _not_an_address(text, f"{rest!r} after the host is not :PORT")
        port = rest[1:]
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not port:
        raise _not_an_address(text, "no port")
    if host in ("", "[]"):
        raise _not_an_address(text, f"no host (0.0.0.0:{port} serves on every interface)")
    return host, port


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def _not_an_address(text: str, why: str) -> ValueError:
    return ValueError(f"{text!r}: {why}; expected {ADDRESS_FORM}")


# Both processes log as text for a person at a terminal; the chart and the manifests choose json for
# log pipelines.
DEFAULT_LOG_FORMAT: Final[LogFormat] = "text"
# Info shows what changed without a line per watch event: the controller logs one line per
# reconcile that had something to do; per-pod and per-node decisions, and the summary of a
# reconcile that changed nothing, are at debug.
DEFAULT_LOG_LEVEL: Final[LogLevel] = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepullSettings:
    # Any image with a static /bin/busybox: it is copied into the pull Job, so that an image
    # without a shell can be pulled too. A musl build, whose busybox is static, pinned by the
    # digest of its multi-platform index (docs/decisions.md, "Supply chain").
    toolbox_image: str = (
        "busybox:1.37.0-musl"
        "@sha256:fc6dddc4c44b1bfe37f41cae8e67d1693828e8f42a91862816d7953e2c9d3f23"
    )
    # A pull that has not finished in 10 minutes is reported failed (PullImageFail) rather than
    # left waiting for ever; large images over an edge link can take minutes.
    deadline_seconds: int = 600
    # The bounds of `--prepull-deadline`: a Job needs ten seconds to start at all, and a day pulls
    # any image over any link the lab measures; the admission policy refuses pull Jobs outside
    # them (design §10.9).
    shortest_deadline_seconds: int = 10
    longest_deadline_seconds: int = 86400
    # Pre-pull before delete (design §13.5). A request with no result this long after the Job's
    # own deadline no longer holds its pod: the Job's deadline runs from its start, after the
    # request's echo and the Job's creation, and its failure is reported after it; a minute more
    # covers those steps, so the margin only catches a pull that never got a Job at all.
    fallback_margin_seconds: int = 60
    # Pulls asked for ahead of the deletions: twice max-unavailable, the next batch waiting with
    # its images there while the batch after it pulls. A batch is asked for two restarts before
    # its turn, so the budget waits for a download only when one takes longer than that, and a
    # registry serves two batches at a time, not the whole fleet.
    window_per_budget: int = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class PullJobSettings:
    """The fixed parts of every pre-pull Job (`kube/manifests.py`, design §6.2); no flag sets them.

    The admission policy (deploy/base/controller-policy.yaml) admits these values only (a user
    that is not root, these resources, this TTL); tests/unit/deploy/test_controller_policy.py
    holds its literals to them."""

    # The user and group every container runs as, whatever the image says: the conventional
    # "nonroot" of distroless images, so it is never root and owns nothing else on the node.
    user: int = 65532
    # Each container asks for almost nothing: it only has to exist long enough for its image to
    # be pulled, and a pull Job must fit on a node that is already full with its workload.
    cpu_request: str = "1m"
    memory_request: str = "4Mi"
    # The limits bound what a pulled image could do if it ran anything (it runs only the copied
    # busybox), and leave room for the runtime's own start-up in the container's cgroup.
    cpu_limit: str = "50m"
    memory_limit: str = "16Mi"
    # A finished Job is deleted once reported; its TTL of 10 minutes only cleans up after a
    # controller that stopped before it could report.
    finished_ttl_seconds: int = 600


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchSettings:
    # client-go's reflector lists in pages of 500: one page is one request the API server can
    # answer from its watch cache without holding much memory for it.
    page_size: int = 500
    # Each watch asks the API server to end it after a random 4-6 minutes, so that many caches
    # do not reconnect in lockstep (client-go spreads its own over 5-10 minutes).
    rewatch_min_seconds: int = 240
    rewatch_max_seconds: int = 360
    # A watch opened outside a cache, which picks no timeout of its own, asks for 5 minutes: the
    # middle of the caches' range, so it too is ended and reopened rather than held for ever.
    default_timeout_seconds: int = 300
    # After a failed list or watch: retry after half a second, doubling up to 2 s (each wait a
    # random time in the upper half of that). A controller that cannot see the cluster does
    # nothing, so it keeps trying: at 2 s, the few caches of a process cost an absent API server a
    # handful of connection attempts a second, and once it is back every cache resumes within
    # 2 s, sooner when another cache of the process got through first (`informer.Reconnect`).
    first_retry_delay: float = 0.5
    max_backoff: float = 2.0
    # After handing on the events one read of a watch brought, stop reading it for 50 ms: the
    # events that arrive meanwhile wait in the socket and are then read, decrypted, decoded and
    # applied together, with one wake-up of the process and one reconcile for several. In a
    # 3,000-node rollout, against 10 ms, this cut the controller's reconciles from 487 to 298
    # and its CPU per replaced pod from 1.16 to 0.94 ms, while a freed slot was still used
    # again after 29 ms at the median (24 ms), 0.5 s at the p99 (docs/scale.md). 0: read as
    # events come.
    batch_seconds: float = 0.050


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeClientSettings:
    """How both processes talk to the API server (`kube/api.py`, `kube/informer.py`)."""

    # A single request (get, create, patch, delete) not answered in 30 s fails, and what made it
    # is tried again (a reconcile with backoff): a healthy API server answers in milliseconds.
    request_timeout: float = 30.0
    # A page of a list can take the API server longer (it may come from etcd, not its cache).
    list_timeout: float = 60.0
    # Opening a watch's connection: 10 s, after which the cache's backoff retries it.
    watch_connect_timeout: float = 10.0
    # A watch asks the server to end it after its timeout; one silent for 30 s longer than that
    # (no event, no bookmark) is a dead connection.
    watch_read_slack: float = 30.0
    watch: WatchSettings = field(default_factory=WatchSettings)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkQueueSettings:
    # client-go's default controller rate limiter: a key that failed comes back after 5 ms,
    # doubling per consecutive failure up to 5 minutes; a success resets it.
    base_delay: float = 0.005
    max_delay: float = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileSettings:
    # Writes of one reconcile in flight at once: as many as the API client's connection pool holds
    # (100), so that a whole wave of deletions (the first one of a rollout is the budget) leaves at
    # once, as the native DaemonSet controller sends its own. With 32, the first 100 deletions of
    # a 1,000-node rollout took four round trips on the loaded lab (0.6-1.0 s against its 0.3 s).
    write_concurrency: int = 100
    # While deletions are in flight, look again after 5 s even if no event arrives: the check is
    # made from the cache (never a LIST), so it costs nothing when all is well.
    requeue_while_deleting: float = 5.0
    # While a node's new pod is starting or failing, look again this often even if no event
    # comes: its progress deadline passing, or a restart being forgiven, is told by the clock
    # alone. Deadlines are minutes long; 5 s late is on time.
    health_recheck: float = 5.0
    # A deletion whose effect the cache never shows stops holding the budget after 5 minutes
    # (client-go's ExpectationsTimeout), so a lost watch event cannot stall a rollout for ever.
    expectations_timeout: float = 300.0
    # A condition write whose echo has not reached the cache after 10 s may be sent again (so a
    # condition someone changed back meanwhile is written again).
    condition_write_timeout: float = 10.0
    # An unechoed condition write is re-checked no sooner than 1 s after the reconcile: its echo
    # normally arrives first and triggers the reconcile by itself.
    condition_recheck_floor: float = 1.0
    # A DaemonSet's rollout condition is written at once when its reason changes, but when only
    # its counts do, at most this often: a 10,000-node rollout would otherwise write its
    # DaemonSet's status once per replaced pod, as many writes as its deletions.
    rollout_condition_interval: float = 10.0
    # A DaemonSet over N nodes is reconciled again no sooner than N times this after its last
    # reconcile: 0.2 s at 10,000 nodes, where a rollout brings an event every few milliseconds and
    # a reconcile's fixed part (its snapshot, the deletions in flight, the standing) costs about
    # 1 ms of CPU; 20 ms at 1,000 nodes, within the watches' 50 ms batch. A reconcile's fixed part
    # grows with the nodes, so its share of a core stays about the same (half a percent). Never
    # more than `pace_max_seconds`. An event meanwhile waits for the pause's end, and the next
    # plan takes it with whatever else came (design §10.2).
    pace_per_node_seconds: float = 0.00002
    pace_max_seconds: float = 0.5

    def pause_after(self, nodes: int) -> float:
        """How long a key rests after a reconcile that planned over `nodes` nodes."""
        return min(nodes * self.pace_per_node_seconds, self.pace_max_seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventSettings:
    # client-go's event spam filter: per DaemonSet, a burst of 25 Normal Events, then one more
    # every 5 minutes; a 1,000-node rollout must not write 1,000 Events.
    burst: int = 25
    refill_seconds: float = 300.0
    # Warnings (a bad value each, design §7): 64 at once, then one a minute per DaemonSet, so that
    # a value edited in a loop cannot write an Event per edit (a person fixing values by hand
    # stays within the burst); a Warning held back is sent later.
    warning_burst: int = 64
    warning_refill_seconds: float = 60.0
    # Keys of the notices told, remembered per DaemonSet (16-byte digests, oldest forgotten first).
    remembered: int = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerSettings:
    """Everything one controller process runs with, built once from its flags.

    Each flag of `edgerollout controller` sets the field of its name (`--metrics-address` sets
    `metrics_address`), but for the two that set `prepull`'s fields: `--prepull-toolbox-image`
    (`prepull.toolbox_image`) and `--prepull-deadline` (`prepull.deadline_seconds`). No flag sets
    the others."""

    # None: in-cluster credentials, then ~/.kube/config, as kubectl finds them.
    kubeconfig: str | None = None
    # None: the DaemonSets of every namespace, as the chart's default watchNamespace asks too.
    namespace: str | None = None
    # Off for a controller run by hand, which needs no Lease; the manifests and the chart run two
    # replicas with it on.
    leader_elect: bool = False
    # Where kube-controller-manager keeps its own Leases; the chart puts it in its own namespace.
    leader_election_namespace: str = "kube-system"
    # The controller's RBAC Role grants get/update on this one Lease name only.
    leader_election_name: str = "edgerollout-controller"
    # client-go's and kube-controller-manager's defaults (15 s / 10 s / 2 s): a standby takes over
    # within a lease duration of the leader's last renewal, and a leader that could not renew for
    # the renew deadline stops writing before anyone else may start.
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # The Lease holder's name. Empty: HOST_UUID, new for each process as client-go's is (a
    # host_pid would be the same for a container restarted in its pod: it would take its dead
    # predecessor's Lease at once instead of waiting for it to expire).
    identity: str = ""
    # Four DaemonSets reconciled at once: a reconcile mostly waits on the API server, and one key
    # is never worked on by two workers, so more workers only help with many DaemonSets.
    workers: int = 4
    # Loopback by default: a controller run by hand exposes nothing; the manifests and the chart
    # bind all interfaces for Prometheus and the kubelet's probes.
    metrics_address: Address = Address("127.0.0.1", 8080)
    health_address: Address = Address("127.0.0.1", 8081)
    log_format: LogFormat = DEFAULT_LOG_FORMAT
    log_level: LogLevel = DEFAULT_LOG_LEVEL
    prepull: PrepullSettings = field(default_factory=PrepullSettings)
    # The namespaces whose opted-in DaemonSets the controller may roll back on failure (design
    # §13.4.1; `--rollback-namespace`, the chart's controller.rollback.namespaces): none by
    # default, since the rollback writes a pod template, the one power the controller otherwise
    # lacks. Elsewhere `edgerollout.io/on-failure: rollback` pauses, with a Warning.
    rollback_namespaces: frozenset[str] = frozenset()
    # On shutdown, the Events of deletions already made are sent before the Lease is released;
    # each is one request, so 5 s is ample and a stuck API server cannot hold the exit.
    shutdown_report_grace: float = 5.0
    queue: WorkQueueSettings = field(default_factory=WorkQueueSettings)
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    events: EventSettings = field(default_factory=EventSettings)

    def leader_election_problem(self) -> str | None:
        """Why the Lease's timings cannot work together, or None. A standby must not take the
        Lease while the leader may still be writing (lease duration above the renew deadline),
        and one attempt, which may take two retry periods, must end before the renew deadline."""
        if self.lease_duration <= self.renew_deadline:
            return (
                f"--lease-duration ({self.lease_duration:g}) must be greater than "
                f"--renew-deadline ({self.renew_deadline:g})"
            )
        if self.renew_deadline <= 2 * self.retry_period:
            return (
                f"--renew-deadline ({self.renew_deadline:g}) must be greater than twice "
                f"--retry-period ({self.retry_period:g}): one attempt may take two retry periods"
            )
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """Everything one agent process runs with, built once from its flags: each flag of
    `edgerollout agent` sets the field of its name (`--token-file` sets `token_file`). No flag
    sets the fields after `log_level`."""

    # No default: --node-name is required (the manifests pass the pod's spec.nodeName). Empty
    # only in `AGENT`, which holds the other fields' defaults.
    node_name: str = ""
    # None: in-cluster credentials, then ~/.kube/config, as kubectl finds them.
    kubeconfig: str | None = None
    # The address OpenYurt's YurtHub and ACK Edge's edge-hub serve, which node-side scripts call;
    # loopback, so only the node itself can reach it.
    listen: Address = Address("127.0.0.1", 10267)
    # Callers must present the node's token: any process on the node, any hostNetwork pod and any
    # web page open in a browser on the node reach loopback too. "none" is OpenYurt's behaviour,
    # for a drop-in migration only; it is logged and shown in /metrics.
    auth: AgentAuth = "token"
    # Where the install's init container writes the token (0600, in a 0700 directory) and where
    # node-side scripts read it: one path for the agent, `init-agent-token`, the manifests, the
    # chart and the docs.
    token_file: Path = Path("/var/lib/edgerollout/agent-token")
    # How often the agent proves again that the API server confines it to its node, for
    # /readyz, the metric and the Warning: every upgrade and pre-pull proves it again first
    # anyway (design §8.3), so this only bounds how stale a report is. Five minutes keep the
    # fleet's probes light: at 10,000 nodes about 70 dry-run requests a second.
    scoping_check_interval: float = 300.0
    # None: the pods are kept in memory only, so GET /pods answers after a restart only once the
    # API server has; the manifests and the chart keep them in a directory on the node.
    cache_dir: Path | None = None
    log_format: LogFormat = DEFAULT_LOG_FORMAT
    log_level: LogLevel = DEFAULT_LOG_LEVEL
    # An upgrade or pre-pull request that cannot reach the API server is answered 503
    # CloudUnreachable within 2 s, so a node-side script learns at once that the link is down.
    cloud_timeout: float = 2.0
    # No route reads a body: 64 KiB is far more than any client sends, and bounds what one may
    # make the agent read.
    max_body_bytes: int = 64 * 1024
    # A node's link comes back at any moment: the pod cache retries every 3 s at most, current
    # soon after, at the cost of a refused connection now and then.
    watch_max_backoff: float = 3.0
    # The pod cache is written to disk at most once a second: fresh enough to serve after a
    # restart, without a write per pod event.
    cache_save_interval: float = 1.0
    # Browsers and scripts reuse a connection for a while; 15 s keeps that, while an idle
    # connection cannot hold one of the agent's slots for aiohttp's default hour.
    keepalive_timeout: float = 15.0
    # Requests served at once; beyond it 503. A node's scripts make a handful at a time, and a
    # runaway local client must not exhaust the agent's memory or the API server's patience.
    max_in_flight_requests: int = 64
    # Without a verdict (no pod in the cache yet, the API server not answering) the probe is
    # tried again after 2 s: the agent refuses every change meanwhile, so it should not wait 30.
    scoping_retry_without_verdict: float = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusSettings:
    """The `status` command (`cli/status_command.py`); no flag sets them."""

    # `status --watch` reads the DaemonSet and lists its pods, its ControllerRevisions and every
    # Node again each second, printing only when the output changed: a person watching sees a
    # node move within a second, and each round costs the API server a GET and three LISTs, so
    # polling faster would add load for changes no one reads sooner.
    poll_seconds: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ListSettings:
    """The `list` command (`cli/list_command.py`); no flag sets them."""

    # `list --watch` reads the changes its watches bring as they come, but waits this long after
    # the first of a burst before it works out the rows again: a rollout changes several pods
    # within a few milliseconds (a deletion, its replacement, the DaemonSet's status), each row
    # costs a plan of its DaemonSet, and a person reading the rows sees no difference at 0.1 s.
    settle_seconds: float = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardSettings:
    """The `dashboard` command (`cli/dashboard_command.py`); `--address` sets `address`."""

    # Loopback, and a port the kernel picks: the server acts with the operator's own
    # credentials, so nothing else on the network may reach it, and two operators (or two
    # dashboards) on one machine never collide on a port.
    address: Address = Address("127.0.0.1", 0)
    # After a list or a watch fails (the API server unreachable, or refusing), start the watches
    # again after this long, doubling up to the ceiling: the page shows the failure meanwhile,
    # and a dashboard left open over a network outage comes back on its own.
    reconnect_seconds: float = 1.0
    reconnect_ceiling_seconds: float = 30.0
    # A rollout's page is sent again at most this often while its rollout changes: a document of
    # 10,000 nodes is about a megabyte, and a person reading a grid sees no difference at 1 s.
    push_interval_seconds: float = 1.0
    # A DaemonSet is read again at most this often: a reading of 10,000 nodes costs about 130 ms,
    # and a rollout that changes pods every 0.1 s would otherwise keep the event loop busy with
    # readings no page can show sooner than `push_interval_seconds`.
    read_interval_seconds: float = 1.0
    # The newest Events of a rollout shown on its page: a fleet's rollout writes one per wave,
    # batch or broken node, and the oldest of a long one tell nothing about now.
    events_shown: int = 50


CONTROLLER: Final = ControllerSettings()
AGENT: Final = AgentSettings()
KUBE_CLIENT: Final = KubeClientSettings()
PULL_JOB: Final = PullJobSettings()
STATUS: Final = StatusSettings()
LIST: Final = ListSettings()
DASHBOARD: Final = DashboardSettings()
