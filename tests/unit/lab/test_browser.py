"""How the lab's headless browser is started: a start that never says where DevTools listens is
stopped and made once more (the browser itself is driven in tests/e2e/test_dashboard.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgerollout_lab import browser

# Chromium's line, printed by a stand-in once its marker file exists: the first start stays
# silent (and makes the marker), the second one answers.
SILENT_THEN_LISTENING = """\
if [ -e "$1/started" ]; then
  echo 'DevTools listening on ws://127.0.0.1:40123/devtools/browser/3f2a' >&2
else
  touch "$1/started"
fi
exec sleep 60
"""


def stand_in(tmp_path: Path, script: str) -> list[str]:
    path = tmp_path / "chromium"
    path.write_text(script)
    return ["/bin/sh", str(path), str(tmp_path)]


async def test_a_silent_start_is_stopped_and_the_second_one_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser, "START_TIMEOUT", 0.5)
    data = tmp_path / "data"
    data.mkdir()
    (data / "SingletonLock").write_text("left by the first start")

    process, endpoint = await browser._start(stand_in(tmp_path, SILENT_THEN_LISTENING), data, {})
    try:
        assert endpoint == "127.0.0.1:40123"
        assert process.returncode is None
        # The second start had an empty profile.
        assert not data.exists()
    finally:
        await browser._stop(process)
    assert process.returncode is not None


async def test_two_silent_starts_are_an_error_with_what_it_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(browser, "START_TIMEOUT", 0.3)
    script = "echo 'Failed to connect to the bus' >&2\ntouch \"$1/start-$$\"\nexec sleep 60\n"

    with pytest.raises(browser.BrowserError) as raised:
        await browser._start(stand_in(tmp_path, script), tmp_path / "data", {})

    assert str(raised.value) == (
        "Chromium did not start its DevTools endpoint:\nFailed to connect to the bus\n"
    )
    assert starts(tmp_path) == browser.START_ATTEMPTS == 2


def starts(folder: Path) -> int:
    return len(list(folder.glob("start-*")))
