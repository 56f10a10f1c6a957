"""The operator-schema parser: what it reads, how it prints, and torch's errors for malformed schemas."""
from __future__ import annotations

import math

import pytest

from npusim.core.dispatch.native_functions import schema_lines
from npusim.core.dispatch.schema import parse_schema

ATEN = list(schema_lines())


def test_arguments_returns_and_flags():
    s = parse_schema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert (s.name, s.overload_name) == ("add", "out")
    assert [a.name for a in s.arguments] == ["self", "other", "alpha", "out"]
    assert [a.kwarg_only for a in s.arguments] == [False, False, True, True]
    assert s.arguments[2].default == 1 and not s.arguments[0].has_default
    out = s.arguments[3].type
    assert (out.base, out.alias, out.is_write) == ("Tensor", "a", True)
    assert s.is_out and not s.is_inplace
    assert [a.name for a in s.mutable_args] == ["out"]
    assert len(s.returns) == 1 and s.returns[0].type.alias == "a"


def test_types_lists_optionals_and_defaults():
    s = parse_schema('f(Tensor?[] a, int[]? b, int[2] k=1, SymInt[] size=[], float eps=1e-05, str mode="mean", '
                     "bool flag=True, ScalarType? dtype=None, MemoryFormat m=contiguous_format, float lo=-inf, "
                     "int n=-1, Tensor? w=None) -> (Tensor values, Tensor indices)")
    args = {a.name: a for a in s.arguments}
    a = args["a"].type
    assert a.is_list and a.elem_optional and not a.optional
    b = args["b"].type
    assert b.is_list and b.optional and not b.elem_optional
    assert args["k"].type.list_size == 2 and args["k"].default == (1, 1)  # "int[2] k=1" means [1, 1]
    assert args["size"].default == ()
    assert args["eps"].default == 1e-05 and args["mode"].default == "mean" and args["flag"].default is True
    assert args["dtype"].default is None and args["m"].default == "contiguous_format"
    assert args["lo"].default == -math.inf and args["n"].default == -1 and args["w"].default is None
    assert [r.name for r in s.returns] == ["values", "indices"] and s.returns_tuple


def test_inplace_and_view_alias_annotations():
    s = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
    assert s.is_inplace and not s.is_out
    s = parse_schema("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]")
    assert s.arguments[0].type.alias_after == "*" and s.returns[0].type.is_list


def test_every_aten_schema_round_trips():
    for line in ATEN:
        assert str(parse_schema(line)) == line


@pytest.mark.oracle
def test_aten_schemas_print_like_torch(torch):
    for line in ATEN:
        assert str(parse_schema(line)) == str(torch._C.parse_schema(line)), line


PRINTED = [
    "f(Tensor x) -> (Tensor)",
    "f(Tensor x) -> (Tensor a)",
    "f(Tensor x) -> ()",
    "f() -> Tensor",
    "ns::f.ov(Tensor x) -> (Tensor a, Tensor b)",
    "f(float a=1e-5, float b=0.001, float c=2., float d=-1.5) -> Tensor",
    "f(Tensor(a -> *) x) -> Tensor(a)[]",
    'f(str x="mean", str y=\'sum\') -> Tensor',
    "f(int x = -2, int[1] k=[0], int[] e=[]) -> Tensor",
    "  f ( Tensor  x ) ->  Tensor  ",
    "f(Tensor x,\n Tensor y)->Tensor",
    "f(Tensor x, *, int a=1, int b) -> Tensor",
    "f(complex x, Any y, Storage z) -> Any",
]


@pytest.mark.oracle
@pytest.mark.parametrize("text", PRINTED)
def test_schemas_print_like_torch(torch, text):
    assert str(parse_schema(text)) == str(torch._C.parse_schema(text))


UNKNOWN_TYPE = ("\nunknown type specifier. Common valid schema types include Tensor, SymInt, int, float, bool, "
                "Scalar; for a full list, please see "
                "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/README.md#func :\n")


def marked(text, head, token, after=0):
    """torch's layout: the message, the schema, and "~" under ``token`` (first found past ``after``)."""
    col = text.index(token, after)
    return f"{head}{text}\n{' ' * col}{'~' * len(token)} <--- HERE\n"


def found(text, expected, kind, token, after=0):
    return marked(text, f"expected {expected} but found '{kind}' here:\n", token, after)


# (schema, torch's message)
MALFORMED = [
    ("baz(Tensr x) -> Tensor", marked("baz(Tensr x) -> Tensor", UNKNOWN_TYPE, "Tensr")),
    ("f(Dimname x) -> Tensor", marked("f(Dimname x) -> Tensor", UNKNOWN_TYPE, "Dimname")),
    ("baz(Tensor x -> Tensor", found("baz(Tensor x -> Tensor", ")", "arrow", "->")),
    ("baz(Tensor x) Tensor", found("baz(Tensor x) Tensor", "arrow", "ident", "Tensor", after=5)),
    ("baz(Tensor x, ) -> Tensor", found("baz(Tensor x, ) -> Tensor", "ident", ")", ")")),
    ("baz(Tensor x=) -> Tensor", found("baz(Tensor x=) -> Tensor", "None", ")", ")")),
    ("baz(Tensor 1x) -> Tensor", found("baz(Tensor 1x) -> Tensor", "ident", "number", "1")),
    ("(Tensor x) -> Tensor", found("(Tensor x) -> Tensor", "ident", "(", "(")),
    ("baz.(Tensor x) -> Tensor", found("baz.(Tensor x) -> Tensor", "ident", "(", "(")),
    ("f(Tensor x) -> Tensor$", marked("f(Tensor x) -> Tensor$", "expected a valid token but found '$' here:\n", "$")),
    ("f(Tensor x) -> Tensor extra junk", found("f(Tensor x) -> Tensor extra junk", "eof", "ident", "junk")),
    ("f(Tensor x=1) -> Tensor", found("f(Tensor x=1) -> Tensor", "None", "number", "1")),
    ("f(int[] x=1) -> Tensor", found("f(int[] x=1) -> Tensor", "[", "number", "1")),
    ("f(Tensor[ x) -> Tensor", found("f(Tensor[ x) -> Tensor", "number", "ident", "x")),
    ("f(x) -> Tensor", found("f(x) -> Tensor", "ident", ")", ")")),
    ("f.12(Tensor x) -> Tensor", found("f.12(Tensor x) -> Tensor", "eof", "number", ".12")),
    ("f17 -> Tensor", found("f17 -> Tensor", "eof", "arrow", "->")),
    ("f(Tensor x) -> -> Tensor", found("f(Tensor x) -> -> Tensor", "ident", "arrow", "->", after=13)),
    ("f(Tensor x) -> (Tensor, )", found("f(Tensor x) -> (Tensor, )", "ident", ")", ")", after=15)),
    # at the end of the text torch shows no marker
    ("f(Tensor x)", "expected arrow but found 'eof' here:\nf(Tensor x)"),
    ("f18(Tensor x", "expected ) but found 'eof' here:\nf18(Tensor x"),
    ("", "expected ident but found 'eof' here:\n"),
    ("baz", "Tried to parse a function schema but only the operator name was given"),
]


@pytest.mark.parametrize("text,message", MALFORMED)
def test_malformed_schemas_raise_torchs_message(text, message):
    with pytest.raises(RuntimeError) as info:
        parse_schema(text)
    assert str(info.value) == message


@pytest.mark.oracle
@pytest.mark.parametrize("text,message", MALFORMED)
def test_malformed_schema_messages_are_torchs(torch, text, message):
    with pytest.raises(RuntimeError) as info:
        torch._C.parse_schema(text)
    assert str(info.value) == message


@pytest.mark.parametrize("text,token", [
    ("baz(Tensr x) -> Tensor", "Tensr"), ("baz(Tensor x) Tensor", "Tensor"), ("f(Tensor x) -> Tensor y junk", "junk"),
    ("f(Tensor x) -> Tensor$", "$"), ("f(bool x=maybe) -> Tensor", "maybe"), ("f(int x=--2) -> Tensor", "-"),
])
def test_the_marker_underlines_the_bad_token(text, token):
    with pytest.raises(RuntimeError) as info:
        parse_schema(text)
    lines = str(info.value).splitlines()
    marker = next(line for line in lines if line.endswith("<--- HERE"))
    start = marker.index("~")
    assert text[start:start + marker.count("~")] == token


def test_default_value_errors():
    with pytest.raises(RuntimeError, match=r"^\ninvalid numeric default value:\nf\(str x=abc\) -> Tensor\n"):
        parse_schema("f(str x=abc) -> Tensor")
    with pytest.raises(RuntimeError, match="^expected number but found '-' here"):
        parse_schema("f(int x=--2) -> Tensor")
    assert parse_schema("f(int x=- 2) -> Tensor").arguments[0].default == -2


def test_argument_order_and_duplicates():
    with pytest.raises(RuntimeError, match=r"^Non-default positional argument follows default argument. Parameter z "
                                           r"in f\(Tensor x, int y=1, Tensor z\) -> Tensor$"):
        parse_schema("f(Tensor x, int y=1, Tensor z) -> Tensor")
    # torch accepts a repeated name and then cannot bind it; refusing it early is clearer
    with pytest.raises(RuntimeError, match=r"^argument 'x' appears more than once in schema"):
        parse_schema("f(Tensor x, Tensor x) -> Tensor")


def test_schema_must_be_text():
    with pytest.raises(TypeError, match="^schema must be a str, got int$"):
        parse_schema(3)
