"""The pattern language of ``npusim.func.rearrange`` (einops'): one side of ``"b (h w) c -> b h w c"`` parsed into
its axes, with the checks and messages of torch's functorch.einops (itself adapted from einops, MIT licence).

A side is a list of entries, one per tensor dimension: a list of axis names (a parenthesised group, or one name in a
list of its own; ``1`` or ``()`` is an empty list) or ``ELLIPSIS`` (``...``: the dimensions no name covers).
"""
from __future__ import annotations

import keyword
import warnings

ELLIPSIS = "\u2026"      # one character standing for "...", so that it is a token like a name


class AnonymousAxis:
    """An axis given by its size (``2``) instead of a name; two of them are never equal."""

    def __init__(self, value: str) -> None:
        self.value = int(value)
        if self.value < 1:
            raise ValueError(f"Anonymous axis should have positive length, not {self.value}")

    def __repr__(self) -> str:
        return f"{self.value}-axis"


def _axis_name_problem(name: str) -> str:
    """"" when ``name`` may name an axis, else why not (keywords and 'axis' only warn, as in einops)."""
    if not name.isidentifier():
        return "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        return "axis name should should not start or end with underscore"
    if keyword.iskeyword(name):
        warnings.warn(f"It is discouraged to use axes names that are keywords: {name}", RuntimeWarning)
    if name == "axis":
        warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an error in future",
                      FutureWarning)
    return ""


class ParsedSide:
    """One side of a pattern: ``composition`` (the entries), ``identifiers`` (every name, anonymous axis and
    ellipsis), ``has_ellipsis``, ``has_ellipsis_parenthesized`` and ``has_non_unitary_anonymous_axes``."""

    def __init__(self, expression: str) -> None:
        self.has_ellipsis = False
        self.has_ellipsis_parenthesized = None
        self.identifiers: set = set()
        self.has_non_unitary_anonymous_axes = False
        self.composition: list = []
        if "." in expression:
            if "..." not in expression:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if expression.count("...") != 1 or expression.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); only one ellipsis for tensor ")
            expression = expression.replace("...", ELLIPSIS)
            self.has_ellipsis = True
        group = None
        token = None
        for char in expression:
            if char in "() ":
                if token is not None:
                    self._add(token, group)
                token = None
                if char == "(":
                    if group is not None:
                        raise ValueError("Axis composition is one-level (brackets inside brackets not allowed)")
                    group = []
                elif char == ")":
                    if group is None:
                        raise ValueError("Brackets are not balanced")
                    self.composition.append(group)
                    group = None
            elif char.isalnum() or char in ("_", ELLIPSIS):
                token = char if token is None else token + char
            else:
                raise ValueError(f"Unknown character '{char}'")
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
        if token is not None:
            self._add(token, group)

    def _add(self, name: str, group) -> None:
        if name in self.identifiers:
            raise ValueError(f"Indexing expression contains duplicate dimension '{name}'")
        if name == ELLIPSIS:
            self.identifiers.add(ELLIPSIS)
            (self.composition if group is None else group).append(ELLIPSIS)
            self.has_ellipsis_parenthesized = group is not None
            return
        is_number = name.isdecimal()
        if is_number and int(name) == 1:
            if group is None:            # a unitary axis of its own; inside a group it changes nothing
                self.composition.append([])
            return
        problem = "" if is_number else _axis_name_problem(name)
        if problem:
            raise ValueError(f"Invalid axis identifier: {name}\n{problem}")
        axis = AnonymousAxis(name) if is_number else name
        self.identifiers.add(axis)
        self.has_non_unitary_anonymous_axes |= is_number
        if group is None:
            self.composition.append([axis])
        else:
            group.append(axis)


def parse_pattern(pattern: str, axes_lengths) -> tuple:
    """The two sides of ``pattern``, checked against each other."""
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    if ELLIPSIS in axes_lengths:
        raise ValueError(f"'{ELLIPSIS}' is not an allowed axis identifier")
    left, right = ParsedSide(left_text), ParsedSide(right_text)
    if not left.has_ellipsis and right.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left.has_ellipsis and left.has_ellipsis_parenthesized:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    return left, right


def validate_rearrange(left: ParsedSide, right: ParsedSide, axes_lengths) -> None:
    """rearrange's own rules: integer lengths, no anonymous axis but 1, the same names on both sides."""
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.has_non_unitary_anonymous_axes or right.has_non_unitary_anonymous_axes:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = left.identifiers ^ right.identifiers
    if difference:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on both): {difference}")
    unmatched = axes_lengths.keys() - left.identifiers
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
