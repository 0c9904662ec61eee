"""The pinned upstream versions, the shipped Go modules that pin them, and the build cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgerollout_lab import versions
from edgerollout_lab.versions import COMPONENTS, LAB, OPENYURT, PEERS, GoComponent

MAIN_MODULES = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kwok": "sigs.k8s.io/kwok",
    "kubernetes": "k8s.io/kubernetes",
    "helm": "helm.sh/helm/v4",
    "openyurt": "github.com/openyurtio/openyurt",
}
PINS = "k8s-v1.36.5_etcd-v3.6.16_kwok-v0.8.0_helm-v4.3.1_"
# k8s.io modules with their own release line: not part of kubernetes' staging folder.
NOT_STAGING = {"k8s.io/kubernetes", "k8s.io/klog/v2", "k8s.io/kube-openapi", "k8s.io/utils"}


def component(name: str) -> GoComponent:
    every = (*COMPONENTS, *(c for peer in PEERS.values() for c in peer.components))
    return next(c for c in every if c.name == name)


def directives(go_mod: str, verb: str) -> list[str]:
    """The lines of every `verb` directive in go.mod, single-line and block forms alike."""
    lines: list[str] = []
    in_block = False
    for raw in go_mod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if in_block:
            if line == ")":
                in_block = False
            elif line:
                lines.append(line)
        elif line == f"{verb} (":
            in_block = True
        elif line.startswith(f"{verb} "):
            lines.append(line.removeprefix(f"{verb} ").strip())
    return lines


def requires(go_mod: str) -> dict[str, str]:
    return dict(line.split() for line in directives(go_mod, "require"))


def replaces(go_mod: str) -> dict[str, tuple[str, str]]:
    result: dict[str, tuple[str, str]] = {}
    for line in directives(go_mod, "replace"):
        old, new = (side.split() for side in line.split("=>"))
        result[old[0]] = (new[0], new[1])
    return result


def go_mod(name: str) -> str:
    return versions.gomod_files(component(name))["go.mod"].decode()


def test_build_key_names_the_pins_and_is_stable() -> None:
    key = versions.build_key()

    assert key == versions.build_key()
    assert key.startswith(PINS)
    assert re.fullmatch(r"[0-9a-f]{10}", key.removeprefix(PINS))


@pytest.mark.parametrize("name", ["kwok", "helm"])
def test_build_key_changes_when_a_go_sum_changes(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    before = versions.build_key()
    shipped = versions.gomod_files

    def edited(c: GoComponent) -> dict[str, bytes]:
        files = shipped(c)
        if c.name == name:
            files["go.sum"] += b"example.com/extra v1.0.0 h1:AAAA=\n"
        return files

    monkeypatch.setattr(versions, "gomod_files", edited)

    after = versions.build_key()
    assert after != before
    assert after.rsplit("_", 1)[0] == before.rsplit("_", 1)[0]


def test_a_peer_has_a_cache_folder_of_its_own_and_no_part_in_the_lab_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path))
    lab_before, peer_before = versions.build_key(), OPENYURT.key()
    shipped = versions.gomod_files

    def edited(c: GoComponent) -> dict[str, bytes]:
        files = shipped(c)
        if c.name == "openyurt":
            files["go.sum"] += b"example.com/extra v1.0.0 h1:AAAA=\n"
        return files

    monkeypatch.setattr(versions, "gomod_files", edited)

    assert versions.build_key() == lab_before
    assert OPENYURT.key() != peer_before
    assert re.fullmatch(r"openyurt-v1\.5\.1_[0-9a-f]{10}", OPENYURT.key())
    assert OPENYURT.bin_dir() == tmp_path / OPENYURT.key() / "bin"
    assert LAB.bin_dir() == versions.bin_dir() != OPENYURT.bin_dir()


def test_cache_root_prefers_the_explicit_lab_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    assert versions.cache_root() == tmp_path / "explicit"


def test_cache_root_falls_back_to_xdg_cache_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("EDGEROLLOUT_LAB_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    assert versions.cache_root() == tmp_path / "xdg" / "edgerollout" / "lab"


def test_cache_root_treats_empty_variables_as_unset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    assert versions.cache_root() == tmp_path / "home" / ".cache" / "edgerollout" / "lab"


def test_bin_dir_is_per_build_key_under_the_cache_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path))

    assert versions.bin_dir() == tmp_path / versions.build_key() / "bin"


def test_components_are_etcd_kwok_kubernetes_and_helm_at_their_pins() -> None:
    assert [(c.name, c.version) for c in COMPONENTS] == [
        ("etcd", "v3.6.16"),
        ("kwok", "v0.8.0"),
        ("kubernetes", "v1.36.5"),
        ("helm", "v4.3.1"),
    ]


def test_the_only_peer_is_openyurt_building_yurt_manager_stamped_with_its_version() -> None:
    assert PEERS == {"openyurt": OPENYURT}
    assert [(c.name, c.version) for c in OPENYURT.components] == [("openyurt", "v1.5.1")]
    yurt = component("openyurt")
    assert yurt.packages == ("github.com/openyurtio/openyurt/cmd/yurt-manager",)
    assert yurt.binaries == ("yurt-manager",)
    assert yurt.ldflags.split() == [
        "-s",
        "-w",
        "-X",
        "github.com/openyurtio/openyurt/pkg/projectinfo.gitVersion=v1.5.1",
    ]


def test_openyurt_go_mod_carries_openyurts_own_replace_block() -> None:
    replaced = replaces(go_mod("openyurt"))
    elsewhere = {
        "k8s.io/klog/v2": ("k8s.io/klog/v2", "v2.100.1"),
        "k8s.io/kubernetes": ("github.com/kubernetes/kubernetes", "v1.28.9"),
        "sigs.k8s.io/apiserver-network-proxy": (
            "github.com/openyurtio/apiserver-network-proxy",
            "v0.1.0",
        ),
        "sigs.k8s.io/apiserver-network-proxy/konnectivity-client": (
            "sigs.k8s.io/apiserver-network-proxy/konnectivity-client",
            "v0.30.2",
        ),
    }

    assert {old: new for old, new in replaced.items() if old in elsewhere} == elsewhere
    staging = {old: new for old, new in replaced.items() if old not in elsewhere}
    assert len(staging) == 27
    assert staging == {old: (old, "v0.28.9") for old in staging}


def test_helm_builds_its_command_into_one_binary_named_helm() -> None:
    helm = component("helm")

    assert helm.packages == ("helm.sh/helm/v4/cmd/helm",)
    assert helm.binaries == ("helm",)


@pytest.mark.parametrize("name", sorted(MAIN_MODULES))
def test_each_component_ships_go_mod_go_sum_and_tools_go(name: str) -> None:
    files = versions.gomod_files(component(name))

    assert sorted(files) == ["go.mod", "go.sum", "tools.go"]
    assert all(files.values())
    assert files["go.mod"].decode().startswith(f"module edgerollout.local/lab/{name}\n")


@pytest.mark.parametrize("name", sorted(MAIN_MODULES))
def test_tools_go_imports_every_package_the_component_builds(name: str) -> None:
    tools = versions.gomod_files(component(name))["tools.go"].decode()

    assert tools.startswith("//go:build tools\n")
    assert sorted(re.findall(r'_ "([^"]+)"', tools)) == sorted(component(name).packages)


@pytest.mark.parametrize("name", sorted(MAIN_MODULES))
def test_go_mod_requires_the_main_module_at_the_pinned_version(name: str) -> None:
    assert requires(go_mod(name))[MAIN_MODULES[name]] == component(name).version


def test_kubernetes_go_mod_replaces_every_staging_module_with_the_pinned_release() -> None:
    text = go_mod("kubernetes")
    staging_version = "v0." + versions.KUBERNETES_VERSION.removeprefix("v1.")
    required_staging = {
        module
        for module in requires(text)
        if module.startswith("k8s.io/") and module not in NOT_STAGING
    }
    replaced = replaces(text)

    assert staging_version == "v0.36.5"
    assert required_staging
    assert required_staging <= set(replaced)
    assert {old: new for old, new in replaced.items() if new != (old, staging_version)} == {}


STAMPS = {
    "kubernetes": {
        "k8s.io/component-base/version.gitVersion": "v1.36.5",
        "k8s.io/component-base/version.gitMajor": "1",
        "k8s.io/component-base/version.gitMinor": "36",
        "k8s.io/component-base/version.gitTreeState": "clean",
        "k8s.io/client-go/pkg/version.gitVersion": "v1.36.5",
    },
    "helm": {
        "helm.sh/helm/v4/internal/version.version": "v4.3.1",
        "helm.sh/helm/v4/internal/version.gitTreeState": "clean",
    },
}


@pytest.mark.parametrize("name", sorted(STAMPS))
def test_binaries_are_stripped_and_stamped_with_the_pinned_version(name: str) -> None:
    flags = component(name).ldflags.split()

    assert flags[:2] == ["-s", "-w"]
    assert dict(flag.split("=", 1) for flag in flags[2:] if flag != "-X") == STAMPS[name]
