"""Label selectors as `kubectl -l` writes them (apimachinery's `labels.Parse`): parsed into their
canonical form, matched as Kubernetes matches them, and refused with a message saying where, what
was expected and what was found."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.spec.label_selector import (
    LabelSelector,
    LabelSelectorError,
    Operator,
    Requirement,
    parse_label_selector,
)

from .builders import returned_or_raised

# ---- Parsing: every operator, the spellings apimachinery accepts, the canonical form.


@pytest.mark.parametrize(
    ("text", "requirement"),
    [
        pytest.param("zone=west", Requirement(key="zone", operator=Operator.EQUALS, values=frozenset({"west"})), id="equals"),
        pytest.param("zone==west", Requirement(key="zone", operator=Operator.EQUALS, values=frozenset({"west"})), id="double-equals-is-equals"),
        pytest.param("zone!=west", Requirement(key="zone", operator=Operator.NOT_EQUALS, values=frozenset({"west"})), id="not-equals"),
        pytest.param("zone in (west,east)", Requirement(key="zone", operator=Operator.IN, values=frozenset({"west", "east"})), id="in"),
        pytest.param("zone notin (west,east)", Requirement(key="zone", operator=Operator.NOT_IN, values=frozenset({"west", "east"})), id="notin"),
        pytest.param("zone", Requirement(key="zone", operator=Operator.EXISTS), id="exists"),
        pytest.param("!zone", Requirement(key="zone", operator=Operator.DOES_NOT_EXIST), id="does-not-exist"),
        pytest.param("rank>3", Requirement(key="rank", operator=Operator.GREATER_THAN, values=frozenset({"3"})), id="greater-than"),
        pytest.param("rank<3", Requirement(key="rank", operator=Operator.LESS_THAN, values=frozenset({"3"})), id="less-than"),
        pytest.param("zone=", Requirement(key="zone", operator=Operator.EQUALS, values=frozenset({""})), id="empty-value"),
        pytest.param("zone in ()", Requirement(key="zone", operator=Operator.IN, values=frozenset({""})), id="empty-set-is-the-empty-value"),
        pytest.param("zone in (,west)", Requirement(key="zone", operator=Operator.IN, values=frozenset({"", "west"})), id="empty-value-first-in-set"),
        pytest.param("zone in (west,)", Requirement(key="zone", operator=Operator.IN, values=frozenset({"", "west"})), id="empty-value-last-in-set"),
        pytest.param("zone in (west,west)", Requirement(key="zone", operator=Operator.IN, values=frozenset({"west"})), id="repeated-value-once"),
        pytest.param("example.com/zone=west", Requirement(key="example.com/zone", operator=Operator.EQUALS, values=frozenset({"west"})), id="prefixed-key"),
        pytest.param("in in (notin)", Requirement(key="in", operator=Operator.IN, values=frozenset({"notin"})), id="keywords-as-key-and-value"),
        pytest.param("notin", Requirement(key="notin", operator=Operator.EXISTS), id="keyword-as-exists-key"),
        pytest.param("rank>9223372036854775807", Requirement(key="rank", operator=Operator.GREATER_THAN, values=frozenset({"9223372036854775807"})), id="largest-int64"),
    ],
)  # fmt: skip
def test_each_operator_parses_to_its_requirement(text: str, requirement: Requirement) -> None:
    assert parse_label_selector(text) == LabelSelector(requirements=(requirement,))


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param(" zone = west , ! gpu ", "!gpu,zone=west", id="spaces-around-every-token"),
        pytest.param("zone\t=\twest\r\n,\nrank>1", "rank>1,zone=west", id="tab-cr-lf-are-whitespace"),
        pytest.param("zone in(west)", "zone in (west)", id="no-space-before-parenthesis"),
        pytest.param("zone notin ( east , west )", "zone notin (east,west)", id="spaces-inside-set"),
        pytest.param("zone in (west,east,,)", "zone in (,east,west)", id="set-values-sorted-empty-first"),
        pytest.param("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()", id="apimachinery-doc-example"),
        pytest.param("zone=west,rank<5,!gpu,arch", "arch,!gpu,rank<5,zone=west", id="sorted-by-key"),
        pytest.param("zone==west,zone=west", "zone=west", id="same-requirement-once"),
        pytest.param("zone=west,zone=east", "zone=east,zone=west", id="conflicting-requirements-kept"),
        pytest.param("rank>007", "rank>007", id="number-kept-as-written"),
        pytest.param("zone=,gpu!=", "gpu!=,zone=", id="empty-values-before-comma-and-end"),
        pytest.param("", "", id="empty"),
        pytest.param(" \t\r\n ", "", id="blank"),
    ],
)  # fmt: skip
def test_selector_prints_in_canonical_form(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


def test_empty_and_blank_selectors_require_nothing_and_match_everything() -> None:
    for text in ("", "   ", "\t\n"):
        selector = parse_label_selector(text)
        assert selector == LabelSelector()
        assert selector.empty is True
        assert selector.matches({}) is True
        assert selector.matches({"zone": "west"}) is True
    assert parse_label_selector("zone").empty is False


# ---- Matching, as Kubernetes' Requirement.Matches.

NODE = {"zone": "west", "rank": "3", "gpu": "", "example.com/tier": "edge"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        pytest.param("zone=west", True, id="equals-same"),
        pytest.param("zone=West", False, id="equals-is-case-sensitive"),
        pytest.param("zone=east", False, id="equals-other"),
        pytest.param("absent=west", False, id="equals-absent"),
        pytest.param("zone==west", True, id="double-equals-same"),
        pytest.param("zone!=east", True, id="not-equals-other"),
        pytest.param("zone!=west", False, id="not-equals-same"),
        pytest.param("absent!=west", True, id="not-equals-matches-absent-key"),
        pytest.param("zone in (east,west)", True, id="in-member"),
        pytest.param("zone in (east)", False, id="in-not-member"),
        pytest.param("absent in (west)", False, id="in-absent"),
        pytest.param("zone notin (east)", True, id="notin-not-member"),
        pytest.param("zone notin (east,west)", False, id="notin-member"),
        pytest.param("absent notin (west)", True, id="notin-matches-absent-key"),
        pytest.param("zone", True, id="exists"),
        pytest.param("gpu", True, id="exists-with-empty-value"),
        pytest.param("absent", False, id="exists-absent"),
        pytest.param("!absent", True, id="does-not-exist-absent"),
        pytest.param("!zone", False, id="does-not-exist-present"),
        pytest.param("!gpu", False, id="does-not-exist-present-empty"),
        pytest.param("gpu=", True, id="equals-empty-value"),
        pytest.param("absent=", False, id="equals-empty-absent"),
        pytest.param("gpu!=", False, id="not-equals-empty-value"),
        pytest.param("gpu in ()", True, id="in-empty-set-is-empty-value"),
        pytest.param("zone in ()", False, id="in-empty-set-other-value"),
        pytest.param("zone notin ()", True, id="notin-empty-set-other-value"),
        pytest.param("rank>2", True, id="gt-above"),
        pytest.param("rank>3", False, id="gt-equal"),
        pytest.param("rank>02", True, id="gt-zero-padded-bound"),
        pytest.param("rank<4", True, id="lt-below"),
        pytest.param("rank<3", False, id="lt-equal"),
        pytest.param("zone>0", False, id="gt-value-not-an-integer"),
        pytest.param("gpu<1", False, id="lt-empty-value"),
        pytest.param("absent>0", False, id="gt-absent"),
        pytest.param("absent<1", False, id="lt-absent"),
        pytest.param("example.com/tier=edge", True, id="prefixed-key"),
        pytest.param("tier=edge", False, id="prefix-is-part-of-the-key"),
        pytest.param("zone=west,rank>2,!absent", True, id="all-hold"),
        pytest.param("zone=west,rank>3", False, id="one-fails"),
        pytest.param("zone=west,zone=east", False, id="contradiction"),
        pytest.param("", True, id="empty-selector"),
    ],
)  # fmt: skip
def test_selector_matches_labels_as_kubernetes_does(text: str, matches: bool) -> None:
    assert parse_label_selector(text).matches(NODE) is matches


@pytest.mark.parametrize(
    ("value", "text", "matches"),
    [
        pytest.param("-5", "n<0", True, id="negative-label-value"),
        pytest.param("+5", "n>4", True, id="plus-sign"),
        pytest.param("007", "n>6", True, id="leading-zeros"),
        pytest.param("9223372036854775807", "n>9223372036854775806", True, id="int64-max"),
        pytest.param("9223372036854775808", "n>0", False, id="above-int64"),
        pytest.param("-9223372036854775808", "n<0", True, id="int64-min"),
        pytest.param("-9223372036854775809", "n<0", False, id="below-int64"),
        pytest.param("9" * 5000, "n>0", False, id="thousands-of-digits"),
        pytest.param(" 5", "n>0", False, id="space"),
        pytest.param("1_000", "n>0", False, id="underscore"),
        pytest.param("\u0663", "n>0", False, id="arabic-indic-digit"),
        pytest.param("1e3", "n>0", False, id="exponent"),
        pytest.param("-", "n<1", False, id="sign-alone"),
    ],
)  # fmt: skip
def test_gt_and_lt_read_label_values_as_go_parse_int_does(
    value: str, text: str, matches: bool
) -> None:
    assert parse_label_selector(text).matches({"n": value}) is matches


# ---- Errors: what was wrong, where, what was expected.

LONG_PREFIX = ".".join(["a" * 63] * 4) + "b"  # 256 characters


@pytest.mark.parametrize(
    ("text", "column", "problem"),
    [
        pytest.param("=west", 1, 'expected a label key or "!", found "="', id="starts-with-operator"),
        pytest.param(",zone", 1, 'expected a label key or "!", found ","', id="starts-with-comma"),
        pytest.param("zone=west,", 11, 'expected a label key or "!" after ",", found the end', id="trailing-comma"),
        pytest.param("zone,,gpu", 6, 'expected a label key or "!" after ",", found ","', id="double-comma"),
        pytest.param("!", 2, 'expected a label key after "!", found the end', id="bang-alone"),
        pytest.param("!!zone", 2, 'expected a label key after "!", found "!"', id="double-bang"),
        pytest.param("!=west", 1, 'expected a label key or "!", found "!="', id="not-equals-without-key"),
        pytest.param("!zone=west", 6, 'expected "," or the end after "!zone", found "="', id="bang-key-with-value"),
        pytest.param("zone west", 6, 'expected "=", "==", "!=", "in", "notin", ">", "<", "," or the end after "zone", found "west"', id="missing-operator"),
        pytest.param("zone!", 5, 'expected "=", "==", "!=", "in", "notin", ">", "<", "," or the end after "zone", found "!"', id="bang-after-key"),
        pytest.param("zone (west)", 6, 'expected "=", "==", "!=", "in", "notin", ">", "<", "," or the end after "zone", found "("', id="set-without-in"),
        pytest.param("zone in west", 9, 'expected "(" after "in", found "west"', id="in-without-parenthesis"),
        pytest.param("zone notin", 11, 'expected "(" after "notin", found the end', id="notin-at-end"),
        pytest.param("zone in (west", 14, 'expected "," or ")" after "west", found the end', id="unclosed-set"),
        pytest.param("zone in (", 10, 'expected a value, "," or ")" after "(", found the end', id="set-opened-at-end"),
        pytest.param("zone in (west east)", 15, 'expected "," or ")" after "west", found "east"', id="values-without-comma"),
        pytest.param("zone in (west,=)", 15, 'expected a value, "," or ")" after ",", found "="', id="operator-in-set"),
        pytest.param("zone in ((west))", 10, 'expected a value, "," or ")" after "(", found "("', id="nested-parenthesis"),
        pytest.param("zone=(west)", 6, 'expected a value after "=", found "("', id="parenthesis-after-equals"),
        pytest.param("zone===west", 7, 'expected a value after "==", found "="', id="triple-equals"),
        pytest.param("rank>=3", 6, 'expected a value after ">", found "="', id="greater-or-equal"),
        pytest.param("zone=west rack=1", 11, 'expected "," or the end after "zone=west", found "rack"', id="missing-comma"),
        pytest.param("zone in (west) east", 16, 'expected "," or the end after "zone in (west)", found "east"', id="word-after-set"),
        pytest.param("zone=west\0,!edge", 10, "a NUL character is not allowed in a label selector", id="nul"),
        pytest.param("a/b/c", 1, 'label key "a/b/c" has more than one "/": write an optional prefix, "/", then a name', id="two-slashes"),
        pytest.param("/zone", 1, 'label key "/zone" has an empty prefix before "/"', id="empty-prefix"),
        pytest.param("example.com/", 1, 'label key "example.com/" has an empty name after "/"', id="empty-name"),
        pytest.param("Example.com/zone", 1, 'the prefix "Example.com" of label key "Example.com/zone" must be a lowercase DNS subdomain: parts of a-z, 0-9 and "-" separated by ".", each starting and ending with a letter or digit', id="uppercase-prefix"),
        pytest.param("example-.com/zone", 1, 'the prefix "example-.com" of label key "example-.com/zone" must be a lowercase DNS subdomain: parts of a-z, 0-9 and "-" separated by ".", each starting and ending with a letter or digit', id="prefix-part-ends-with-dash"),
        pytest.param(f"{LONG_PREFIX}/zone", 1, f'label key "{LONG_PREFIX}/zone" has a prefix of 256 characters, more than 253', id="long-prefix"),
        pytest.param("z" * 64, 1, f'label key "{"z" * 64}" is 64 characters long, more than 63', id="long-name"),
        pytest.param(f"example.com/{'z' * 64}", 1, f'the name "{"z" * 64}" of label key "example.com/{"z" * 64}" is 64 characters long, more than 63', id="long-prefixed-name"),
        pytest.param("-zone", 1, 'label key "-zone" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="name-starts-with-dash"),
        pytest.param("example.com/zone_", 1, 'the name "zone_" of label key "example.com/zone_" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="prefixed-name-ends-with-underscore"),
        pytest.param("gpu, zone:a", 6, 'label key "zone:a" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="colon-in-key"),
        pytest.param("z\u00f6ne=a", 1, 'label key "z\u00f6ne" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="non-ascii-key"),
        pytest.param("zone\u00a0=a", 1, 'label key "zone\\xa0" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="no-break-space-is-not-whitespace"),
        pytest.param("! -zone", 3, 'label key "-zone" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="invalid-key-after-bang"),
        pytest.param("zone=-west", 6, 'label value "-west" must be empty or consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="value-starts-with-dash"),
        pytest.param("zone=" + "w" * 64, 6, f'label value "{"w" * 64}" is 64 characters long, more than 63', id="long-value"),
        pytest.param("zone in (west, e@st)", 16, 'label value "e@st" must be empty or consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="invalid-value-in-set"),
        pytest.param("zone notin (_west)", 13, 'label value "_west" must be empty or consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="invalid-value-in-notin"),
        pytest.param("rank>", 6, '">" needs a whole number from 0 to 9223372036854775807, found nothing', id="gt-without-value"),
        pytest.param("rank<,zone", 6, '"<" needs a whole number from 0 to 9223372036854775807, found nothing', id="lt-without-value-before-comma"),
        pytest.param("rank>-1", 6, '">" needs a whole number from 0 to 9223372036854775807, found "-1"', id="gt-negative"),
        pytest.param("rank>+1", 6, '">" needs a whole number from 0 to 9223372036854775807, found "+1"', id="gt-plus-sign"),
        pytest.param("rank<three", 6, '"<" needs a whole number from 0 to 9223372036854775807, found "three"', id="lt-word"),
        pytest.param("rank<1.5", 6, '"<" needs a whole number from 0 to 9223372036854775807, found "1.5"', id="lt-decimal"),
        pytest.param("rank>9223372036854775808", 6, '">" needs a whole number from 0 to 9223372036854775807, found "9223372036854775808"', id="gt-above-int64"),
        pytest.param("rank>" + "0" * 63 + "1", 6, f'label value "{"0" * 63}1" is 64 characters long, more than 63', id="gt-zero-padded-beyond-63"),
    ],
)  # fmt: skip
def test_invalid_selector_is_refused_saying_where_and_what(
    text: str, column: int, problem: str
) -> None:
    with pytest.raises(LabelSelectorError) as refused:
        parse_label_selector(text)
    shown = text.replace("\0", "\\x00").replace("\u00a0", "\\xa0")
    assert str(refused.value) == f'label selector "{shown}", at character {column}: {problem}'
    assert (refused.value.problem, refused.value.selector, refused.value.column) == (
        problem,
        text,
        column,
    )


def test_error_message_escapes_quotes_and_control_characters() -> None:
    with pytest.raises(LabelSelectorError) as refused:
        parse_label_selector('zone="west"\t\x7f')
    assert str(refused.value) == (
        'label selector "zone=\\"west\\"\\t\\x7f", at character 6: '
        'label value "\\"west\\"" must be empty or consist of letters, digits, "-", "_" and ".", '
        "starting and ending with a letter or digit"
    )


@pytest.mark.parametrize(
    ("key", "operator", "values", "problem"),
    [
        pytest.param("zone", Operator.IN, set(), '"in" needs at least one value, found none', id="in-without-values"),
        pytest.param("zone", Operator.NOT_IN, set(), '"notin" needs at least one value, found none', id="notin-without-values"),
        pytest.param("zone", Operator.EQUALS, {"a", "b"}, '"=" needs exactly one value, found 2', id="equals-two-values"),
        pytest.param("zone", Operator.NOT_EQUALS, set(), '"!=" needs exactly one value, found 0', id="not-equals-no-value"),
        pytest.param("rank", Operator.GREATER_THAN, {"1", "2"}, '">" needs exactly one value, found 2', id="gt-two-values"),
        pytest.param("zone", Operator.EXISTS, {"west"}, '"exists" takes no value, found 1', id="exists-with-value"),
        pytest.param("zone", Operator.DOES_NOT_EXIST, {"west"}, '"!" takes no value, found 1', id="does-not-exist-with-value"),
        pytest.param("rank", Operator.LESS_THAN, {"x"}, '"<" needs a whole number from 0 to 9223372036854775807, found "x"', id="lt-not-a-number"),
        pytest.param("", Operator.EXISTS, set(), "a label key cannot be empty", id="empty-key"),
        pytest.param("a b", Operator.EXISTS, set(), 'label key "a b" must consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="key-with-space"),
        pytest.param("zone", Operator.IN, {"west", "e st"}, 'label value "e st" must be empty or consist of letters, digits, "-", "_" and ".", starting and ending with a letter or digit', id="value-with-space"),
    ],
)  # fmt: skip
def test_requirement_built_directly_is_checked_as_a_parsed_one(
    key: str, operator: Operator, values: set[str], problem: str
) -> None:
    with pytest.raises(LabelSelectorError) as refused:
        Requirement(key=key, operator=operator, values=frozenset(values))
    assert str(refused.value) == problem
    assert (refused.value.selector, refused.value.column) == (None, None)


def test_selector_built_directly_is_kept_in_canonical_order() -> None:
    zone = Requirement(key="zone", operator=Operator.IN, values=frozenset({"west", "east"}))
    gpu = Requirement(key="gpu", operator=Operator.DOES_NOT_EXIST)
    selector = LabelSelector(requirements=(zone, gpu, zone))
    assert selector.requirements == (gpu, zone)
    assert selector == LabelSelector(requirements=(gpu, zone))
    assert str(selector) == "!gpu,zone in (east,west)"
    assert parse_label_selector(str(selector)) == selector


# ---- Properties.

NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?"
names = st.from_regex(NAME, fullmatch=True) | st.sampled_from(["in", "notin", "zone", "rank"])
prefixes = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]{1,5}){0,2}", fullmatch=True)
keys = st.builds(
    lambda prefix, name: f"{prefix}/{name}" if prefix else name, prefixes | st.just(""), names
)
values = st.just("") | names
numbers = st.integers(min_value=0, max_value=2**63 - 1).map(str) | st.from_regex(r"0{1,3}[0-9]{1,3}", fullmatch=True)  # fmt: skip
WHITESPACE = st.text(alphabet=" \t\r\n", max_size=2)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    operator = draw(st.sampled_from(list(Operator)))
    if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        chosen: frozenset[str] = frozenset()
    elif operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        chosen = frozenset({draw(numbers)})
    elif operator in (Operator.IN, Operator.NOT_IN):
        chosen = frozenset(draw(st.lists(values, min_size=1, max_size=4)))
    else:
        chosen = frozenset({draw(values)})
    return Requirement(key=draw(keys), operator=operator, values=chosen)


selectors = st.lists(requirements(), max_size=5).map(
    lambda found: LabelSelector(requirements=tuple(found))
)


@st.composite
def spelled(draw: st.DrawFn, requirement: Requirement) -> str:
    """`requirement` as a user might write it: any legal whitespace, `==` for `=`, values of a set
    in any order and repeated, the empty value as an empty place."""

    def space() -> str:
        return draw(WHITESPACE)

    key, operator = requirement.key, requirement.operator
    if operator is Operator.EXISTS:
        return key
    if operator is Operator.DOES_NOT_EXIST:
        return f"!{space()}{key}"
    if operator in (Operator.IN, Operator.NOT_IN):
        listed = draw(st.permutations(sorted(requirement.values)))
        listed += draw(st.lists(st.sampled_from(listed), max_size=2))
        inner = ",".join(f"{space()}{value}{space()}" for value in listed)
        return f"{key} {space()}{operator}{space()}({inner})"
    symbol = draw(st.sampled_from(["=", "=="])) if operator is Operator.EQUALS else str(operator)
    (value,) = requirement.values
    return f"{key}{space()}{symbol}{space()}{value}"


@settings(max_examples=400, deadline=None)
@given(selectors)
def test_canonical_form_parses_back_to_the_same_selector(selector: LabelSelector) -> None:
    canonical = str(selector)
    assert parse_label_selector(canonical) == selector
    assert str(parse_label_selector(canonical)) == canonical


@settings(max_examples=400, deadline=None)
@given(st.data(), st.lists(requirements(), min_size=1, max_size=4))
def test_spelling_and_order_do_not_change_the_selector(
    data: st.DataObject, found: list[Requirement]
) -> None:
    order = data.draw(st.permutations(found + data.draw(st.lists(st.sampled_from(found)))))
    written = ",".join(
        data.draw(WHITESPACE) + data.draw(spelled(requirement)) + data.draw(WHITESPACE)
        for requirement in order
    )
    assert parse_label_selector(written) == LabelSelector(requirements=tuple(found))


label_sets = st.dictionaries(
    st.sampled_from(["zone", "rank", "gpu", "example.com/zone"]), values, max_size=4
)


@settings(max_examples=300, deadline=None)
@given(keys | st.sampled_from(["zone", "gpu"]), values, label_sets)
def test_in_with_one_value_matches_as_equals(key: str, value: str, labels: dict[str, str]) -> None:
    assert parse_label_selector(f"{key} in ({value})").matches(labels) is parse_label_selector(
        f"{key}={value}"
    ).matches(labels)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["zone", "gpu"]), st.lists(values, min_size=1, max_size=3), label_sets)
def test_notin_is_the_negation_of_in_when_the_key_exists_and_holds_when_absent(
    key: str, listed: list[str], labels: dict[str, str]
) -> None:
    inside = parse_label_selector(f"{key} in ({','.join(listed)})").matches(labels)
    outside = parse_label_selector(f"{key} notin ({','.join(listed)})").matches(labels)
    if key in labels:
        assert outside is not inside
        assert inside is (labels[key] in listed)
    else:
        assert (inside, outside) == (False, True)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["zone", "gpu"]), values, label_sets)
def test_not_equals_matches_as_notin_of_one_value(
    key: str, value: str, labels: dict[str, str]
) -> None:
    assert parse_label_selector(f"{key}!={value}").matches(labels) is parse_label_selector(
        f"{key} notin ({value})"
    ).matches(labels)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["zone", "gpu"]), label_sets)
def test_bang_key_is_the_negation_of_key(key: str, labels: dict[str, str]) -> None:
    exists = parse_label_selector(key).matches(labels)
    assert exists is (key in labels)
    assert parse_label_selector(f"!{key}").matches(labels) is not exists


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**63 - 1), st.integers(min_value=0, max_value=2**63 - 1))
def test_gt_and_lt_compare_as_integers(value: int, bound: int) -> None:
    labels = {"rank": str(value)}
    assert parse_label_selector(f"rank>{bound}").matches(labels) is (value > bound)
    assert parse_label_selector(f"rank<{bound}").matches(labels) is (value < bound)


SELECTOR_ALPHABET = "azAZ09-_./=!(),<> \t\n\0\u00e9"
texts = st.text() | st.text(alphabet=SELECTOR_ALPHABET, max_size=30) | st.lists(
    st.sampled_from(["zone", "in", "notin", "(", ")", ",", "=", "==", "!=", "!", ">", "<", "1", " ", "a/b", ""]),
    max_size=10,
).map("".join)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(texts)
def test_any_text_is_a_selector_or_an_error_pointing_into_it(text: str) -> None:
    outcome = returned_or_raised(parse_label_selector, text, LabelSelectorError)
    if isinstance(outcome, LabelSelectorError):
        assert outcome.selector == text
        assert outcome.column is not None
        assert 1 <= outcome.column <= len(text) + 1
        assert str(outcome).endswith(f", at character {outcome.column}: {outcome.problem}")
    else:
        assert parse_label_selector(str(outcome)) == outcome
        assert outcome.empty is (re.fullmatch(r"[ \t\r\n]*", text) is not None)
