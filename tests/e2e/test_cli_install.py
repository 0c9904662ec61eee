"""The README's "Install the CLI", run as written: its commands install edgerollout into an empty
tool folder, and the commands they put on the PATH serve a rollout's status on the lab.

The commands are read from the README itself, so the two cannot drift: the first `sh` block of
the section, one command a line, each run by `sh` in the repository's root; a comment after a
command (`  # ...`) is what it prints on stdout, exactly, and a command without one prints
nothing there. Everything uv writes (the tool's environment, the two commands, its cache) goes
into the test's own folder through `UV_TOOL_DIR`, `UV_TOOL_BIN_DIR` and `UV_CACHE_DIR`, and the
PATH holds only that bin folder and a folder with uv and kubectl: each command the README runs
after the install is the one just installed, or nothing.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from edgerollout.domain.vocabulary import MAX_UNAVAILABLE_ANNOTATION, UPDATE_STRATEGY_ANNOTATION
from tests.e2e.support.cli import BIN
from tests.e2e.support.lab import LabHandle
from tests.e2e.support.seed import NAME, SELECTOR, seed_daemonset

pytestmark = pytest.mark.lab(nodes=3)

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Install the CLI"
COMMANDS = ("edgerollout", "kubectl-edgerollout")
ARU = {UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate", MAX_UNAVAILABLE_ANNOTATION: "30%"}
# What the installed commands' Python must not see: a path into this checkout, or a virtual
# environment, would let the test pass on the tree instead of on what was installed.
PYTHON_VARIABLES = re.compile(r"PYTHON\w*|VIRTUAL_ENV|CONDA_PREFIX")


@dataclass(frozen=True, slots=True)
class ReadmeCommand:
    """One line of the README's install block: the command, and what it prints on stdout."""

    command: str
    prints: str


def install_commands(readme: str) -> list[ReadmeCommand]:
    """The commands of the first `sh` block of the README's install section, in order."""
    lines = readme.splitlines()
    assert lines.count(SECTION) == 1, f'README.md has no "{SECTION}" section, or several'
    section: list[str] = []
    for line in lines[lines.index(SECTION) + 1 :]:
        if line.startswith("## "):
            break
        section.append(line)
    assert "```sh" in section, f'README.md\'s "{SECTION}" section has no ```sh block'
    start = section.index("```sh") + 1
    block = section[start : section.index("```", start)]
    commands = []
    for line in filter(None, map(str.strip, block)):
        command, _, comment = line.partition(" #")
        commands.append(ReadmeCommand(command.strip(), f"{comment.strip()}\n" if comment else ""))
    assert commands, f'README.md\'s "{SECTION}" block holds no command'
    return commands


def _uv() -> Path:
    # `uv run` (and so `./dev test`) names its own binary in $UV.
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "the README installs with uv: run the tests with `./dev run pytest`, or set UV"
    return Path(found)


@dataclass(frozen=True, slots=True)
class ToolFolder:
    """An empty folder for `uv tool install`, and the environment its commands run in."""

    root: Path

    @property
    def tools(self) -> Path:
        return self.root / "tools"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def programs(self) -> Path:
        """uv and kubectl, and nothing else, for the PATH."""
        return self.root / "programs"

    def prepare(self) -> None:
        self.programs.mkdir(parents=True)
        (self.programs / "uv").symlink_to(_uv())
        (self.programs / "kubectl").symlink_to(BIN / "kubectl")

    def environment(self) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if not PYTHON_VARIABLES.fullmatch(k)}
        return {
            **inherited,
            "PATH": os.pathsep.join([str(self.bin), str(self.programs)]),
            "UV_TOOL_DIR": str(self.tools),
            "UV_TOOL_BIN_DIR": str(self.bin),
            "UV_CACHE_DIR": str(self.root / "cache"),
            # No Python is on this PATH: the tool runs on the interpreter running the tests.
            "UV_PYTHON": str(Path(sys.executable).resolve()),
            "UV_NO_PROGRESS": "1",
        }

    def run(self, command: str, *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`command` as a user types it in the repository's root, with this folder's PATH."""
        return subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=ROOT,
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@dataclass(frozen=True, slots=True)
class Installed:
    """The tool folder the README's commands installed into, and what each of them did."""

    folder: ToolFolder
    ran: list[tuple[ReadmeCommand, subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The README's install commands, run once for the session into an empty tool folder."""
    folder = ToolFolder(tmp_path_factory.mktemp("cli-install"))
    folder.prepare()
    commands = install_commands((ROOT / "README.md").read_text())
    return Installed(folder, [(c, folder.run(c.command, timeout=300)) for c in commands])


def test_readme_commands_install_both_commands_into_an_empty_tool_folder(
    installed: Installed,
) -> None:
    for readme, result in installed.ran:
        assert (readme.command, result.returncode, result.stdout) == (
            readme.command,
            0,
            readme.prints,
        ), result.stderr
    folder = installed.folder
    assert sorted(path.name for path in folder.bin.iterdir()) == list(COMMANDS)
    environment = folder.tools / "edgerollout" / "bin"
    for command in COMMANDS:
        assert (folder.bin / command).resolve() == (environment / command).resolve()

    bin_dir = folder.run("uv tool dir --bin")
    assert (bin_dir.returncode, bin_dir.stdout, bin_dir.stderr) == (0, f"{folder.bin}\n", "")
    plugins = folder.run("kubectl plugin list")
    assert (plugins.returncode, plugins.stdout, plugins.stderr) == (
        0,
        f"The following compatible plugins are available:\n\n{folder.bin}/kubectl-edgerollout\n",
        "",
    )


async def test_kubectl_runs_the_installed_plugin_for_the_status_of_a_rollout(
    installed: Installed, kube: LabHandle, namespace: str
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    pods = {pod.spec.node_name: pod.metadata.name for pod in await kube.pods(namespace, SELECTOR)}

    command = f"kubectl edgerollout status {NAME} -n {namespace} --kubeconfig {kube.lab.kubeconfig}"
    result = await asyncio.to_thread(installed.folder.run, command)

    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "Strategy: AdvancedRollingUpdate, max-unavailable 30% (1 of 3 nodes)\n"
        "NODE     NODE-READY   POD                     REVISION   STATE\n"
        f"edge-1   Ready        {pods['edge-1']}   current    updated\n"
        f"edge-2   Ready        {pods['edge-2']}   current    updated\n"
        f"edge-3   Ready        {pods['edge-3']}   current    updated\n"
        f'daemon set "{NAME}" successfully rolled out\n',
        "",
    )
