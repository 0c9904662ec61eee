"""Properties of the annotation parsers over random strings, checked against plain restatements.

`choose_strategy` and `read_max_unavailable` read what users type; whatever they type, the
result is one of the documented outcomes and never an exception.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.events import printable
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, MaxUnavailable
from edgerollout.domain.spec.strategy import UpdateStrategy, choose_strategy
from edgerollout.domain.vocabulary import MAX_UNAVAILABLE_ANNOTATION, UPDATE_STRATEGY_ANNOTATION

from .builders import max_unavailable

STRATEGY_KEY = UPDATE_STRATEGY_ANNOTATION
MAX_UNAVAILABLE_KEY = MAX_UNAVAILABLE_ANNOTATION
NAMES = {
    "advancedrollingupdate": UpdateStrategy.ADVANCED_ROLLING_UPDATE,
    "ota": UpdateStrategy.OTA,
    "auto": UpdateStrategy.ADVANCED_ROLLING_UPDATE,
}
WHITESPACE = st.text(alphabet=" \t\n\r", max_size=3)
TYPES = st.sampled_from(["OnDelete", "RollingUpdate", "", "ondelete", "OnDelete "])


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A known strategy name in any letter case, with stray whitespace around it."""
    name = draw(st.sampled_from(["AdvancedRollingUpdate", "OTA", "auto"]))
    cased = "".join(letter.upper() if draw(st.booleans()) else letter.lower() for letter in name)
    return draw(WHITESPACE) + cased + draw(WHITESPACE)


strategy_values = st.one_of(
    st.text(),
    spellings(),
    st.from_regex(r"[A-Za-z ]{0,24}", fullmatch=True),
)


@settings(max_examples=500, deadline=None)
@given(strategy_values, TYPES)
def test_any_strategy_value_gives_one_documented_outcome(raw: str, kind: str) -> None:
    choice = choose_strategy(annotations={STRATEGY_KEY: raw}, update_strategy_type=kind)
    known = NAMES.get(raw.strip().lower())
    reasons = [notice.reason for notice in choice.notices]
    if known is None:
        assert choice.strategy is None
        assert reasons == ["UnknownUpdateStrategy"]
        assert f'"{printable(raw)}"' in choice.notices[0].message
    elif kind != "OnDelete":
        assert choice.strategy is None
        assert reasons == ["UpdateStrategyNotOnDelete"]
        assert f'found "{kind}"' in choice.notices[0].message
    else:
        assert choice.strategy is known
        expected = ["DeprecatedUpdateStrategy"] if raw.strip().lower() == "auto" else []
        assert reasons == expected


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1).filter(lambda key: key != STRATEGY_KEY), st.text(), max_size=4
    ),
    TYPES,
)
def test_annotations_without_the_strategy_key_never_opt_in_and_say_nothing(
    annotations: dict[str, str], kind: str
) -> None:
    choice = choose_strategy(annotations=annotations, update_strategy_type=kind)
    assert choice.strategy is None
    assert choice.notices == ()


def oracle_budget(raw: str | None, base: int) -> int | None:
    """design §2.3 restated: digits, optionally a `%`; zero or unset is 10%; rounds up; clamps."""
    text = "10%" if raw is None else raw.strip()
    percent = text.endswith("%")
    digits = text[:-1] if percent else text
    if not digits or not all("0" <= char <= "9" for char in digits):
        return None
    if int(digits) == 0:
        return oracle_budget("10%", base)
    value = -(-base * int(digits) // 100) if percent else int(digits)
    return min(value, base)


max_unavailable_values = st.one_of(
    st.none(),
    st.text(),
    st.from_regex(r"\s{0,2}[0-9]{1,6}%?\s{0,2}", fullmatch=True),
    st.from_regex(r"[-+ ]?[0-9]{0,3}[.,%xe ]?[0-9%]{0,3}", fullmatch=True),
)


@settings(max_examples=800, deadline=None)
@given(max_unavailable_values, st.integers(0, 2000))
def test_max_unavailable_matches_the_specification_for_any_text(raw: str | None, base: int) -> None:
    result = max_unavailable(raw, base=base)
    expected = oracle_budget(raw, base)
    if expected is None:
        assert result == InvalidMaxUnavailable(raw=str(raw))
    else:
        assert isinstance(result, MaxUnavailable)
        assert (result.value, result.base) == (expected, base)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["AdvancedRollingUpdate", "OTA"]), max_unavailable_values)
def test_ota_never_reads_max_unavailable_and_rolling_update_reads_it_once(
    strategy: str, raw: str | None
) -> None:
    annotations = {STRATEGY_KEY: strategy}
    if raw is not None:
        annotations[MAX_UNAVAILABLE_KEY] = raw
    choice = choose_strategy(annotations=annotations, update_strategy_type="OnDelete")
    assert choice.notices == ()
    assert choice.strategy is NAMES[strategy.lower()]
