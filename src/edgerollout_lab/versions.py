"""The pinned upstream programs the lab runs, and where their builds are cached.

The lab is a real control plane, so its versions are part of the test contract: a change here changes
what every end-to-end test proves. Kubernetes follows the minor version that KWOK's client-go uses;
etcd is the 3.6 line a current kube-apiserver needs (watch progress requests). Helm is not part of
the control plane: the end-to-end tests use it to lint, render and install the chart in `deploy/helm`.

OpenYurt's yurt-manager is a peer, not part of the lab: the controller edgerollout is compared with
(design §11.9). It is built only when asked for (`lab build --peer openyurt`), into a cache folder of
its own, so that the lab's key, and what `./dev test` builds, stay the same without it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

KUBERNETES_VERSION = "v1.36.5"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"
HELM_VERSION = "v4.3.1"
# The newest release the module proxy serves (v1.6 and later are refused); it builds against
# Kubernetes 0.28 libraries, as its own go.mod pins them.
OPENYURT_VERSION = "v1.5.1"

CACHE_ENV = "EDGEROLLOUT_LAB_CACHE"


@dataclass(frozen=True, slots=True)
class GoComponent:
    """One throwaway Go main module (go.mod + go.sum shipped in `gomod/<name>`) and what it builds."""

    name: str
    version: str
    packages: tuple[str, ...]
    binaries: tuple[str, ...]
    ldflags: str = "-s -w"


def _kubernetes_ldflags() -> str:
    major, minor, _ = KUBERNETES_VERSION.removeprefix("v").split(".")
    stamps = {
        "k8s.io/component-base/version.gitVersion": KUBERNETES_VERSION,
        "k8s.io/component-base/version.gitMajor": major,
        "k8s.io/component-base/version.gitMinor": minor,
        "k8s.io/component-base/version.gitTreeState": "clean",
        "k8s.io/client-go/pkg/version.gitVersion": KUBERNETES_VERSION,
    }
    return " ".join(["-s -w", *(f"-X {key}={value}" for key, value in stamps.items())])


def _helm_ldflags() -> str:
    # What helm's own Makefile stamps into a release build (`helm version` reports it).
    stamps = {
        "helm.sh/helm/v4/internal/version.version": HELM_VERSION,
        "helm.sh/helm/v4/internal/version.gitTreeState": "clean",
    }
    return " ".join(["-s -w", *(f"-X {key}={value}" for key, value in stamps.items())])


def _openyurt_ldflags() -> str:
    # What OpenYurt's hack/lib/build.sh stamps (the version yurt-manager prints when it starts).
    return f"-s -w -X github.com/openyurtio/openyurt/pkg/projectinfo.gitVersion={OPENYURT_VERSION}"


COMPONENTS: tuple[GoComponent, ...] = (
    GoComponent(
        name="etcd",
        version=ETCD_VERSION,
        packages=("go.etcd.io/etcd/server/v3",),
        binaries=("etcd",),
    ),
    GoComponent(
        name="kwok",
        version=KWOK_VERSION,
        packages=("sigs.k8s.io/kwok/cmd/kwok",),
        binaries=("kwok",),
    ),
    GoComponent(
        name="kubernetes",
        version=KUBERNETES_VERSION,
        packages=(
            "k8s.io/kubernetes/cmd/kube-apiserver",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-scheduler",
            # Real nodes' kubelets (`lab up --real-nodes`), from the same pinned module.
            "k8s.io/kubernetes/cmd/kubelet",
        ),
        binaries=("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"),
        ldflags=_kubernetes_ldflags(),
    ),
    GoComponent(
        name="helm",
        version=HELM_VERSION,
        packages=("helm.sh/helm/v4/cmd/helm",),
        binaries=("helm",),
        ldflags=_helm_ldflags(),
    ),
)


def gomod_files(component: GoComponent) -> dict[str, bytes]:
    """The shipped module files of a component (go.mod, go.sum and its .go files: an upstream's
    tools.go, or the source of a program of our own), by file name."""
    folder = resources.files("edgerollout_lab").joinpath("gomod", component.name)
    names = ["go.mod", "go.sum"]
    names += sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".go"))
    return {name: folder.joinpath(name).read_bytes() for name in names}


@dataclass(frozen=True, slots=True)
class BuildSet:
    """Components built together into one cache folder, `<pins>_<hash of their module files>`:
    a change to any of their go.mod or go.sum files gives a new folder, and no other set's."""

    name: str
    pins: str
    components: tuple[GoComponent, ...]

    def key(self) -> str:
        digest = hashlib.sha256()
        for component in self.components:
            for name, content in sorted(gomod_files(component).items()):
                digest.update(f"{component.name}/{name}\0".encode())
                digest.update(content)
        return f"{self.pins}_{digest.hexdigest()[:10]}"

    def bin_dir(self) -> Path:
        return cache_root() / self.key() / "bin"


LAB = BuildSet(
    name="lab",
    pins=f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}_helm-{HELM_VERSION}",
    components=COMPONENTS,
)

OPENYURT = BuildSet(
    name="openyurt",
    pins=f"openyurt-{OPENYURT_VERSION}",
    components=(
        GoComponent(
            name="openyurt",
            version=OPENYURT_VERSION,
            packages=("github.com/openyurtio/openyurt/cmd/yurt-manager",),
            binaries=("yurt-manager",),
            ldflags=_openyurt_ldflags(),
        ),
    ),
)

# How Argo CD and Flux judge a DaemonSet's health with the customizations in deploy/gitops: a
# program of our own, run by the tests (tests/unit/deploy/test_gitops_health.py), pinning the
# interpreters those tools embed at the versions they pin (Argo CD's go.mod: gopher-lua;
# kustomize-controller's go.mod: cel-go and the modules around it). A set of its own, so that a
# change to it rebuilds it alone, never the lab's control plane; `lab build` builds it with the lab.
GITOPS_HEALTH_LUA_VERSION = "v1.1.2"
GITOPS_HEALTH_CEL_VERSION = "v0.26.1"
GITOPS_HEALTH = BuildSet(
    name="gitops-health",
    pins=f"gitops-health_gopher-lua-{GITOPS_HEALTH_LUA_VERSION}_cel-go-{GITOPS_HEALTH_CEL_VERSION}",
    components=(
        GoComponent(
            name="gitops-health",
            version=f"gopher-lua {GITOPS_HEALTH_LUA_VERSION}, cel-go {GITOPS_HEALTH_CEL_VERSION}",
            packages=("edgerollout.local/lab/gitops-health",),
            binaries=("gitops-health",),
        ),
    ),
)

# What `lab build` (and so `./dev test`) always builds.
LAB_SETS: tuple[BuildSet, ...] = (LAB, GITOPS_HEALTH)

# The controllers edgerollout is compared with, by the name `lab build --peer` takes.
PEERS: dict[str, BuildSet] = {OPENYURT.name: OPENYURT}


def build_key() -> str:
    """A short name for the lab's exact set of pins (its cache folder)."""
    return LAB.key()


def cache_root() -> Path:
    """Where builds live, once per machine: `$EDGEROLLOUT_LAB_CACHE` or the user's cache folder."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "edgerollout" / "lab"


def bin_dir() -> Path:
    """The folder holding the lab's binaries of the current pins."""
    return LAB.bin_dir()
