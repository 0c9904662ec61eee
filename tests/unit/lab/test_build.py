"""Building the lab's programs: what `go` is asked to do, stamps, resuming, and errors.

A stand-in `go` on PATH records each call and writes the binaries it is asked for, so these tests
prove the commands and the bookkeeping around them without compiling anything.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from edgerollout_lab import build, versions
from edgerollout_lab.build import BuildError
from edgerollout_lab.versions import COMPONENTS, BuildSet, GoComponent

FAKE_GO = f"""#!{sys.executable}
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_GO_LOG"], "a") as log:
    log.write(json.dumps({{
        "args": args,
        "cwd": os.getcwd(),
        "env": {{k: os.environ.get(k) for k in ("CGO_ENABLED", "GOFLAGS", "GOWORK")}},
    }}) + "\\n")
if os.environ.get("FAKE_GO_FAIL") and args[0] == "build":
    print("compiling helm.sh/helm/v4/pkg/action")
    print("pkg/action/install.go:1:1: syntax error")
    sys.exit(2)
if args[0] == "list":
    print("x" * 3)
elif args[0] == "build":
    output = args[args.index("-o") + 1]
    packages = args[args.index("-o") + 2:]
    for package in packages:
        print(package)
        target = Path(output) / package.rsplit("/", 1)[1] if output.endswith("/") else Path(output)
        target.write_text("binary of " + package)
"""


def component(name: str) -> GoComponent:
    return next(c for c in COMPONENTS if c.name == name)


@pytest.fixture
def go_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A stand-in `go` first on PATH, an empty lab cache; returns the file its calls go to."""
    tools = tmp_path / "tools"
    tools.mkdir()
    go = tools / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    log = tmp_path / "go-calls.jsonl"
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GO_LOG", str(log))
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path / "cache"))
    return log


def calls(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def only(*names: str) -> BuildSet:
    """A build set of some of the lab's components (its own cache folder, like a peer's)."""
    return BuildSet(
        name="lab", pins=versions.LAB.pins, components=tuple(component(name) for name in names)
    )


def test_helm_is_built_from_its_shipped_module_with_its_pins_and_readonly_modules(
    go_log: Path,
) -> None:
    lab = only("helm")
    helm = component("helm")
    work = lab.bin_dir().parent / "src" / "helm"

    report = build.build_all(lambda _: None, lab)

    assert report.built == ("helm",)
    assert report.bin_dir == lab.bin_dir()
    recorded = calls(go_log)
    assert [call["args"] for call in recorded] == [
        ["list", "-deps", "-f", "{{if not .Standard}}x{{end}}", "helm.sh/helm/v4/cmd/helm"],
        [
            "build",
            "-v",
            "-ldflags",
            helm.ldflags,
            "-o",
            str(lab.bin_dir().parent / "bin.helm.partial" / "helm"),
            "helm.sh/helm/v4/cmd/helm",
        ],
    ]
    assert {call["cwd"] for call in recorded} == {str(work)}
    assert {json.dumps(call["env"]) for call in recorded} == {
        json.dumps(
            {"CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false", "GOWORK": "off"}
        )
    }
    shipped = versions.gomod_files(helm)
    assert {name: (work / name).read_bytes() for name in shipped} == shipped
    assert build.binary("helm", lab).read_text() == "binary of helm.sh/helm/v4/cmd/helm"
    assert (lab.bin_dir().parent / "helm.done").read_text() == "helm v4.3.1\n"
    assert not (lab.bin_dir().parent / "bin.helm.partial").exists()


def test_several_packages_are_built_into_binaries_named_after_them(go_log: Path) -> None:
    lab = only("kubernetes")

    build.build_all(lambda _: None, lab)

    staging = lab.bin_dir().parent / "bin.kubernetes.partial"
    assert calls(go_log)[1]["args"] == [
        "build",
        "-v",
        "-ldflags",
        component("kubernetes").ldflags,
        "-o",
        f"{staging}{os.sep}",
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-scheduler",
        "k8s.io/kubernetes/cmd/kubelet",
    ]
    assert sorted(path.name for path in lab.bin_dir().iterdir()) == [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
    ]


def test_a_second_build_finds_everything_in_place_and_runs_no_go(go_log: Path) -> None:
    lab = only("etcd", "helm")
    build.build_all(lambda _: None, lab)
    go_log.unlink()
    said: list[str] = []

    report = build.build_all(said.append, lab)

    assert report.built == ()
    assert calls(go_log) == []
    assert said == [f"lab binaries are up to date in {lab.bin_dir()} ({lab.key()})"]


def test_only_the_missing_component_is_rebuilt(go_log: Path) -> None:
    lab = only("etcd", "helm")
    build.build_all(lambda _: None, lab)
    build.binary("helm", lab).unlink()

    report = build.build_all(lambda _: None, lab)

    assert report.built == ("helm",)
    assert [c.name for c in build.missing_components(lab)] == []


def test_binaries_without_a_stamp_count_as_an_interrupted_build(go_log: Path) -> None:
    lab = only("etcd", "helm")
    build.build_all(lambda _: None, lab)
    (lab.bin_dir().parent / "helm.done").unlink()

    assert build.binary("helm", lab).exists()
    assert [c.name for c in build.missing_components(lab)] == ["helm"]


def test_a_failed_go_build_names_the_component_shows_go_output_and_leaves_no_stamp(
    go_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = only("helm")
    monkeypatch.setenv("FAKE_GO_FAIL", "1")

    with pytest.raises(BuildError) as failure:
        build.build_all(lambda _: None, lab)

    assert str(failure.value) == (
        "building helm failed (go exited 2); last output:\n"
        "compiling helm.sh/helm/v4/pkg/action\n"
        "pkg/action/install.go:1:1: syntax error"
    )
    assert not (lab.bin_dir().parent / "helm.done").exists()
    assert [c.name for c in build.missing_components(lab)] == ["helm"]


def test_without_go_on_path_the_build_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lab = only("helm")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path / "cache"))

    with pytest.raises(BuildError) as failure:
        build.build_all(lambda _: None, lab)

    assert str(failure.value) == "the Go toolchain (`go`) is not on PATH; install Go 1.26 or newer"


def test_binary_of_an_unbuilt_program_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path))

    with pytest.raises(BuildError) as failure:
        build.binary("helm")

    assert str(failure.value) == (
        f"helm is not built yet (looked in {versions.bin_dir() / 'helm'}); run `./dev lab build`"
    )


def test_a_peer_builds_only_when_asked_for_into_its_own_folder(go_log: Path) -> None:
    lab = only("helm")
    build.build_all(lambda _: None, lab)
    peer = versions.OPENYURT

    assert [c.name for c in build.missing_components(peer)] == ["openyurt"]
    report = build.build_all(lambda _: None, peer)

    assert report.built == ("openyurt",)
    assert report.bin_dir == peer.bin_dir() != lab.bin_dir()
    assert calls(go_log)[-1]["args"] == [
        "build",
        "-v",
        "-ldflags",
        peer.components[0].ldflags,
        "-o",
        str(peer.bin_dir().parent / "bin.openyurt.partial" / "yurt-manager"),
        "github.com/openyurtio/openyurt/cmd/yurt-manager",
    ]
    assert calls(go_log)[-1]["cwd"] == str(peer.bin_dir().parent / "src" / "openyurt")
    assert sorted(path.name for path in peer.bin_dir().iterdir()) == ["yurt-manager"]
    assert sorted(path.name for path in lab.bin_dir().iterdir()) == ["helm"]


def test_binary_of_an_unbuilt_peer_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path))
    peer = versions.OPENYURT

    with pytest.raises(BuildError) as failure:
        build.binary("yurt-manager", peer)

    assert str(failure.value) == (
        f"yurt-manager is not built yet (looked in {peer.bin_dir() / 'yurt-manager'}); "
        "run `./dev lab build --peer openyurt`"
    )
