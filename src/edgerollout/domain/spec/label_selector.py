"""Kubernetes label selectors, in the syntax of `kubectl get nodes -l`, parsed and matched.

`edgerollout.io/node-selector` restricts a rollout to the nodes its selector matches. A user checks
which nodes that is with `kubectl get nodes -l '<selector>'`, so the selector must mean here
exactly what it means to the API server: this module follows apimachinery's `labels.Parse`
(`pkg/labels/selector.go`) rule by rule.

- Requirements are separated by commas and must all hold: `key=value` (or `==`), `key!=value`,
  `key in (a,b)`, `key notin (a,b)`, `key` (the label exists), `!key` (it does not), `key>N` and
  `key<N` (the label's value, read as a decimal integer, is greater or less than N; a label whose
  value is not an integer matches neither).
- `!=` and `notin` also match labels without the key, as in Kubernetes.
- Space, tab, CR and LF may stand between any two tokens. They are needed only between a key and
  `in`/`notin` (`zonein` is one word); `zone in(a)`, `! zone` and `zone = a` are all valid.
- A value may be empty: `key=`, `key in (a,)`. `key in ()` is `key in ("")`: the syntax cannot
  write an empty set of values, so every `in`/`notin` has at least one.
- `in` and `notin` are operators only after a key: `in in (notin)` is a valid selector.
- A key is a qualified name: an optional prefix, a lowercase DNS subdomain of at most 253
  characters, and `/`, then a name of at most 63 letters, digits, `-`, `_` and `.` that starts and
  ends with a letter or digit. A value is empty or of the name's form. The number of `>` and `<`
  is a decimal integer that fits in 64 bits and is a valid value, so it has no sign.
- The empty selector, or one of whitespace only, has no requirements and matches every set of
  labels (apimachinery's `Everything`). Whoever reads an annotation decides whether that is
  allowed (`LabelSelector.empty` says so); for `edgerollout.io/node-selector` it is not.

One difference, on purpose: apimachinery's lexer takes a NUL character for the end of the text
(and inside a word skips it), so a stray NUL could silently drop part of a selector and let a
rollout reach more nodes than written. Here a NUL is an error.

An error says where, what was expected and what was found (`label selector "zone in a", at
character 9: expected "(" after "in", found "a"`), in words meant for whoever wrote the annotation.
`str()` gives a canonical form: requirements sorted by key, each once, the values of a set sorted,
`==` written `=`, joined by `,` (apimachinery's `String` form). Two selectors that differ only in
spelling print the same and compare equal; the number of `>`/`<` is kept as written (`007`).
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import NoReturn

_MAX_NAME = 63
_MAX_PREFIX = 253
_MAX_INT64 = 2**63 - 1
_NAME = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*")
_DIGITS = re.compile(r"[0-9]+")
_GO_INT = re.compile(r"[+-]?[0-9]+")  # strconv.ParseInt, base 10

_NAME_FORM = 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit'
_PREFIX_FORM = (
    'a lowercase DNS subdomain: parts of a-z, 0-9 and "-" separated by ".", '
    "each starting and ending with a letter or digit"
)


class LabelSelectorError(ValueError):
    """A label selector that cannot be read: what was wrong and, when parsed from text, where.

    `problem` says what was wrong and what was expected; `selector` and `column` (1-based, in
    characters) locate it in the text parsed, and are None for a `Requirement` built directly.
    The message is `label selector "<text>", at character <column>: <problem>`."""

    def __init__(
        self, problem: str, *, selector: str | None = None, column: int | None = None
    ) -> None:
        where = (
            ""
            if selector is None
            else f"label selector {_quoted(selector)}, at character {column}: "
        )
        super().__init__(where + problem)
        self.problem = problem
        self.selector = selector
        self.column = column


class Operator(StrEnum):
    """How a requirement relates a label's value to its values; each is written as its value,
    except `EXISTS`, which is the bare key. `==` is `EQUALS`."""

    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = ">"
    LESS_THAN = "<"


_SET_OPERATORS = frozenset({Operator.IN, Operator.NOT_IN})
_NUMBER_OPERATORS = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})
_UNARY_OPERATORS = frozenset({Operator.EXISTS, Operator.DOES_NOT_EXIST})


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirement:
    """One condition on one label. Built from parsed text or directly; either way it is checked
    as apimachinery's `NewRequirement` checks it, and an invalid one raises `LabelSelectorError`."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        problem = label_key_problem(self.key) or _arity_problem(self.operator, len(self.values))
        for value in sorted(self.values):
            problem = problem or _value_problem(self.operator, value)
        if problem:
            raise LabelSelectorError(problem)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` meet this requirement (Kubernetes' `Requirement.Matches`)."""
        if self.key not in labels:
            # Only the negative operators hold for a label that is absent.
            return self.operator in (Operator.NOT_EQUALS, Operator.NOT_IN, Operator.DOES_NOT_EXIST)
        value = labels[self.key]
        match self.operator:
            case Operator.EQUALS | Operator.IN:
                return value in self.values
            case Operator.NOT_EQUALS | Operator.NOT_IN:
                return value not in self.values
            case Operator.EXISTS:
                return True
            case Operator.DOES_NOT_EXIST:
                return False
            case Operator.GREATER_THAN | Operator.LESS_THAN:
                number = _int64(value)
                if number is None:
                    return False
                (bound,) = self.values
                if self.operator is Operator.GREATER_THAN:
                    return number > int(bound)
                return number < int(bound)

    def __str__(self) -> str:
        if self.operator is Operator.EXISTS:
            return self.key
        if self.operator is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        values = ",".join(sorted(self.values))
        if self.operator in _SET_OPERATORS:
            return f"{self.key} {self.operator} ({values})"
        return f"{self.key}{self.operator}{values}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelSelector:
    """Requirements that must all hold. Kept sorted by key, each once, whatever order they came
    in, so that equal selectors compare equal and print the same."""

    requirements: tuple[Requirement, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "requirements", _canonical_order(self.requirements))

    @property
    def empty(self) -> bool:
        """True when nothing is required: the selector matches every set of labels."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` (a node's, say) meet every requirement."""
        return all(requirement.matches(labels) for requirement in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


def parse_label_selector(text: str) -> LabelSelector:
    """The selector written as `text` in the syntax of `kubectl -l` (see the module docstring);
    the empty selector for empty or blank text. Raises `LabelSelectorError` saying what is wrong
    and where."""
    return _Parser(text).selector()


def _canonical_order(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    return tuple(
        sorted(set(requirements), key=lambda requirement: (requirement.key, str(requirement)))
    )


# Checks shared by the parser (which adds where) and `Requirement` (which has no text to point at).


def label_key_problem(key: str) -> str | None:
    """What is wrong with `key` as a label key (apimachinery's `IsQualifiedName`), or None."""
    subject = f"label key {_quoted(key)}"
    if not key:
        return "a label key cannot be empty"
    if key.count("/") > 1:
        return f'{subject} has more than one "/": write an optional prefix, "/", then a name'
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f'{subject} has an empty prefix before "/"'
        if len(prefix) > _MAX_PREFIX:
            return f"{subject} has a prefix of {len(prefix)} characters, more than {_MAX_PREFIX}"
        if not _DNS_SUBDOMAIN.fullmatch(prefix):
            return f"the prefix {_quoted(prefix)} of {subject} must be {_PREFIX_FORM}"
        if not name:
            return f'{subject} has an empty name after "/"'
        subject = f"the name {_quoted(name)} of {subject}"
    if len(name) > _MAX_NAME:
        return f"{subject} is {len(name)} characters long, more than {_MAX_NAME}"
    if not _NAME.fullmatch(name):
        return f"{subject} must consist of {_NAME_FORM}"
    return None


def label_value_problem(value: str) -> str | None:
    """What is wrong with `value` as a label value (empty, or a name), or None."""
    return _value_problem(Operator.EQUALS, value)


def _value_problem(operator: Operator, value: str) -> str | None:
    """What is wrong with `value` as a value of `operator`, or None."""
    if operator in _NUMBER_OPERATORS and not (_DIGITS.fullmatch(value) and _fits_int64(value)):
        shown = _quoted(value) if value else "nothing"
        return f'"{operator}" needs a whole number from 0 to {_MAX_INT64}, found {shown}'
    subject = f"label value {_quoted(value)}"
    if len(value) > _MAX_NAME:
        return f"{subject} is {len(value)} characters long, more than {_MAX_NAME}"
    if value and not _NAME.fullmatch(value):
        return f"{subject} must be empty or consist of {_NAME_FORM}"
    return None


def _arity_problem(operator: Operator, count: int) -> str | None:
    """What is wrong with `count` values for `operator`, or None (only a `Requirement` built
    directly can get this wrong: the syntax gives every operator as many values as it takes)."""
    if operator in _UNARY_OPERATORS:
        return None if count == 0 else f'"{operator}" takes no value, found {count}'
    if operator in _SET_OPERATORS:
        return None if count > 0 else f'"{operator}" needs at least one value, found none'
    return None if count == 1 else f'"{operator}" needs exactly one value, found {count}'


def _int64(value: str) -> int | None:
    """`value` as Go's `strconv.ParseInt(value, 10, 64)` reads it (optional sign, ASCII digits,
    64 bits), or None. Python's `int()` would also take spaces, `_` and non-ASCII digits."""
    if not _GO_INT.fullmatch(value):
        return None
    negative = value.startswith("-")
    digits = value.lstrip("+-")
    if not _fits_int64(digits, negative=negative):
        return None
    return -int(digits) if negative else int(digits)


def _fits_int64(digits: str, *, negative: bool = False) -> bool:
    """Whether the decimal `digits` are within int64 (checked on the length first: `int()` refuses
    strings of more than 4,300 digits)."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(_MAX_INT64)):
        return False
    return int(significant) <= _MAX_INT64 + (1 if negative else 0)


def _quoted(text: str) -> str:
    """`text` in double quotes, with quotes, backslashes and characters that do not print (control
    characters, a no-break space that would pass for a space) escaped."""
    return '"' + "".join(_escaped(character) for character in text) + '"'


def _escaped(character: str) -> str:
    if character in _ESCAPES:
        return _ESCAPES[character]
    if character.isprintable():
        return character
    code = ord(character)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


_ESCAPES: Mapping[str, str] = {"\t": "\\t", "\n": "\\n", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


# The lexer. As apimachinery's: a word runs until whitespace or one of `=!(),><`; `!=` and `==`
# are the only two-character symbols (so `===` is `==` then `=`, `>=` is `>` then `=`).

_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = frozenset("=!(),><")
_PAIRS = frozenset({"!=", "=="})


class _Kind(Enum):
    WORD = "a word"  # a key, a value, or `in`/`notin` where an operator is due
    NOT = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER = ">"
    LESS = "<"
    OPEN = "("
    CLOSE = ")"
    COMMA = ","
    END = "the end"


_SYMBOL_KINDS: Mapping[str, _Kind] = {
    kind.value: kind for kind in _Kind if kind not in (_Kind.WORD, _Kind.END)
}
_OPERATORS: Mapping[_Kind, Operator] = {
    _Kind.EQUALS: Operator.EQUALS,
    _Kind.DOUBLE_EQUALS: Operator.EQUALS,
    _Kind.NOT_EQUALS: Operator.NOT_EQUALS,
    _Kind.GREATER: Operator.GREATER_THAN,
    _Kind.LESS: Operator.LESS_THAN,
}
_WORD_OPERATORS: Mapping[str, Operator] = {"in": Operator.IN, "notin": Operator.NOT_IN}
_EXPECTED_OPERATOR = '"=", "==", "!=", "in", "notin", ">", "<", "," or the end'


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    text: str
    start: int  # index of its first character in the selector

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    def __str__(self) -> str:
        return "the end" if self.kind is _Kind.END else _quoted(self.text)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    at = 0
    while True:
        while at < len(text) and text[at] in _WHITESPACE:
            at += 1
        if at == len(text):
            tokens.append(_Token(_Kind.END, "", at))
            return tokens
        symbol = text[at : at + 2] if text[at : at + 2] in _PAIRS else text[at]
        if symbol in _SYMBOLS or symbol in _PAIRS:
            tokens.append(_Token(_SYMBOL_KINDS[symbol], symbol, at))
            at += len(symbol)
            continue
        start = at
        while at < len(text) and text[at] not in _WHITESPACE and text[at] not in _SYMBOLS:
            at += 1
        tokens.append(_Token(_Kind.WORD, text[start:at], start))


class _Parser:
    """apimachinery's recursive descent over the tokens, raising at the first problem:

        selector    = "" | requirement { "," requirement }
        requirement = "!" KEY | KEY [ ("=" | "==" | "!=" | ">" | "<") [VALUE] | ("in" | "notin") set ]
        set         = "(" [VALUE] { "," [VALUE] } ")"

    A missing VALUE is the empty value."""

    def __init__(self, text: str) -> None:
        self.text = text
        nul = text.find("\0")
        if nul >= 0:
            self.fail("a NUL character is not allowed in a label selector", at=nul)
        self.tokens = _tokens(text)
        self.next = 0

    def peek(self) -> _Token:
        return self.tokens[self.next]

    def take(self) -> _Token:
        token = self.tokens[self.next]
        self.next += 1
        return token

    def fail(self, problem: str, *, at: int) -> NoReturn:
        raise LabelSelectorError(problem, selector=self.text, column=at + 1)

    def unexpected(self, token: _Token, expected: str) -> NoReturn:
        self.fail(f"expected {expected}, found {token}", at=token.start)

    def selector(self) -> LabelSelector:
        if self.peek().kind is _Kind.END:
            return LabelSelector()
        requirements: list[Requirement] = []
        after = ""
        while True:
            start = self.peek().start
            requirements.append(self.requirement(after=after))
            token = self.take()
            if token.kind is _Kind.END:
                return LabelSelector(requirements=tuple(requirements))
            if token.kind is not _Kind.COMMA:
                written = self.text[start : self.tokens[self.next - 2].end]
                self.unexpected(token, f'"," or the end after {_quoted(written)}')
            after = ' after ","'

    def requirement(self, *, after: str) -> Requirement:
        """One requirement; `after` says what came before it, for the error if none is there."""
        first = self.take()
        if first.kind is _Kind.NOT:
            key = self.take()
            if key.kind is not _Kind.WORD:
                self.unexpected(key, 'a label key after "!"')
            self.check_key(key)
            return Requirement(key=key.text, operator=Operator.DOES_NOT_EXIST)
        if first.kind is not _Kind.WORD:
            self.unexpected(first, f'a label key or "!"{after}')
        self.check_key(first)
        if self.peek().kind in (_Kind.COMMA, _Kind.END):
            return Requirement(key=first.text, operator=Operator.EXISTS)
        symbol = self.take()
        operator = (
            _WORD_OPERATORS.get(symbol.text)
            if symbol.kind is _Kind.WORD
            else _OPERATORS.get(symbol.kind)
        )
        if operator is None:
            self.unexpected(symbol, f"{_EXPECTED_OPERATOR} after {first}")
        values = self.value_set(symbol) if operator in _SET_OPERATORS else self.value(symbol)
        for value, at in values:
            problem = _value_problem(operator, value)
            if problem:
                self.fail(problem, at=at)
        return Requirement(
            key=first.text, operator=operator, values=frozenset(value for value, _ in values)
        )

    def check_key(self, key: _Token) -> None:
        problem = label_key_problem(key.text)
        if problem:
            self.fail(problem, at=key.start)

    def value(self, operator: _Token) -> list[tuple[str, int]]:
        """The one value after `=`, `==`, `!=`, `>` or `<`, with where it starts."""
        token = self.peek()
        if token.kind in (_Kind.COMMA, _Kind.END):
            return [("", token.start)]
        self.take()
        if token.kind is not _Kind.WORD:
            self.unexpected(token, f"a value after {operator}")
        return [(token.text, token.start)]

    def value_set(self, operator: _Token) -> list[tuple[str, int]]:
        """The values of `in (...)` or `notin (...)`, with where each starts. An empty place
        before a `,` or `)` is the empty value."""
        opening = self.take()
        if opening.kind is not _Kind.OPEN:
            self.unexpected(opening, f'"(" after {operator}')
        values: list[tuple[str, int]] = []
        previous = opening
        while True:
            token = self.take()
            if token.kind is _Kind.WORD:
                values.append((token.text, token.start))
                previous, token = token, self.take()
                if token.kind not in (_Kind.COMMA, _Kind.CLOSE):
                    self.unexpected(token, f'"," or ")" after {previous}')
            elif token.kind in (_Kind.COMMA, _Kind.CLOSE):
                values.append(("", token.start))
            else:
                self.unexpected(token, f'a value, "," or ")" after {previous}')
            if token.kind is _Kind.CLOSE:
                return values
            previous = token
