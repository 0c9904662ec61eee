"""What users wrote reaches Events and terminals as text, never as terminal control (design §7)."""

import pytest

from edgerollout.domain.events import EventType, Notice, printable, shown
from edgerollout.domain.spec.staging import read_staging
from edgerollout.domain.vocabulary import NODE_SELECTOR_ANNOTATION

OSC52 = "\x1b]52;c;Y3VybCBldmlsfHNo\x07"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pool-a, pool-b", "pool-a, pool-b"),
        ("zone=é, ünïcode", "zone=é, ünïcode"),
        (f"a{OSC52}b", "a\\x1b]52;c;Y3VybCBldmlsfHNo\\x07b"),
        ("abc\u202edef", "abc\\u202edef"),
        ("line\nbreak\ttab\x7f", "line\\nbreak\\ttab\\x7f"),
        ("zero\u200bwidth\u00a0space", "zero\\u200bwidth\\xa0space"),
    ],
)
def test_printable_writes_what_a_terminal_would_act_on_as_escapes(text: str, expected: str) -> None:
    assert printable(text) == expected


def test_a_plain_text_is_returned_as_it_is() -> None:
    text = "pool-a, pool-b"

    assert printable(text) is text


def test_shown_cuts_a_long_value_saying_how_much_more_there_was() -> None:
    assert shown("x" * 200) == "x" * 200
    assert shown("x" * 250) == "x" * 200 + "... (50 more characters)"
    assert shown("\x1b" * 3, limit=8) == "\\x1b\\x1b... (4 more characters)"


def test_every_notice_message_is_printable() -> None:
    notice = Notice(type=EventType.WARNING, reason="R", message=f"is {OSC52}", subject=OSC52)

    assert notice.message == "is \\x1b]52;c;Y3VybCBldmlsfHNo\\x07"
    assert notice.subject == OSC52  # the key still tells two values apart


def test_a_warning_quoting_a_bad_value_quotes_it_escaped() -> None:
    [notice] = read_staging({NODE_SELECTOR_ANNOTATION: f"zone={OSC52}"}).notices

    assert notice.message.startswith(
        f'{NODE_SELECTOR_ANNOTATION} is "zone=\\x1b]52;c;Y3VybCBldmlsfHNo\\x07": '
    )
    assert "\x1b" not in notice.message
