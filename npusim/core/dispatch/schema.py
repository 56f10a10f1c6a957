"""Parser for operator schemas in PyTorch's function-schema language.

``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`` becomes a
``FunctionSchema`` with typed arguments and returns. Malformed schemas raise
RuntimeError pointing at the offending token, as PyTorch's parser does.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

BASE_TYPES = frozenset({
    "Tensor", "int", "SymInt", "float", "complex", "bool", "str", "Scalar", "ScalarType", "Device",
    "DeviceIndex", "Layout", "MemoryFormat", "QScheme", "Generator", "Storage", "Stream", "Any",
})

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<arrow>->)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)?)
  | (?P<punct>[()\[\],=*?!.|-])
""", re.VERBOSE)

# Identifiers PyTorch allows as default values.
_NAMED_DEFAULTS = {
    "None": None, "True": True, "False": False,
    "contiguous_format": "contiguous_format", "preserve_format": "preserve_format",
    "channels_last": "channels_last", "strided": "strided",
    "Mean": 1, "Sum": 2, "inf": math.inf,
}


@dataclass(frozen=True)
class SchemaType:
    base: str                     # "Tensor", "int", ...
    is_list: bool = False
    list_size: int | None = None  # int[2]
    optional: bool = False        # Tensor? / int[]? (optional list)
    elem_optional: bool = False   # Tensor?[] (list of optional elements)
    alias: str | None = None      # "a" in Tensor(a!)
    is_write: bool = False        # "!" in Tensor(a!)
    alias_after: str | None = None  # "*" in Tensor(a -> *): what the elements of a returned list alias

    @property
    def is_tensor_like(self) -> bool:
        return self.base == "Tensor"

    def __str__(self):
        s = self.base
        if self.alias is not None:
            after = f" -> {self.alias_after}" if self.alias_after is not None else ""
            s += f"({self.alias}{'!' if self.is_write else ''}{after})"
        if self.elem_optional:
            s += "?"
        if self.is_list:
            s += f"[{self.list_size if self.list_size else ''}]"
        if self.optional:
            s += "?"
        return s


_NO_DEFAULT = object()
# types whose defaults may be bare names ("ScalarType dtype=long")
_IDENT_DEFAULT_TYPES = frozenset({"ScalarType", "Layout", "MemoryFormat", "Device", "Any"})


@dataclass(frozen=True)
class Argument:
    name: str
    type: SchemaType
    default: object = _NO_DEFAULT
    kwarg_only: bool = False
    default_written_as_scalar: bool = False  # "int[2] padding=0": the value is (0, 0), printed as written

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def __str__(self):
        s = f"{self.type} {self.name}"
        if self.has_default:
            bare = isinstance(self.default, str) and self.type.base in _IDENT_DEFAULT_TYPES
            if self.default_written_as_scalar:
                s += "=" + _format_default(self.default[0])
            else:
                s += "=" + (self.default if bare else _format_default(self.default))
        return s


@dataclass(frozen=True)
class Return:
    type: SchemaType
    name: str | None = None

    def __str__(self):
        return f"{self.type}" + (f" {self.name}" if self.name else "")


@dataclass(frozen=True)
class FunctionSchema:
    name: str                     # "add"
    overload_name: str            # "Tensor" ("" for the default overload)
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]
    returns_tuple: bool = field(default=False)  # "-> (Tensor, Tensor)" even with one element

    @property
    def tensor_args(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.type.base == "Tensor")

    @property
    def mutable_args(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.type.is_write)

    @property
    def is_out(self) -> bool:
        return any(a.kwarg_only and a.type.is_write for a in self.arguments)

    @property
    def is_inplace(self) -> bool:
        return bool(self.arguments) and self.arguments[0].type.is_write and not self.arguments[0].kwarg_only

    def __str__(self):
        args, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            args.append(str(a))
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        if len(self.returns) == 1:  # torch prints "-> (Tensor)" as "-> Tensor" too
            rets = str(self.returns[0])
        else:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{name}({', '.join(args)}) -> {rets}"


def _format_default(v) -> str:
    if v is None or isinstance(v, bool):
        return str(v)
    if isinstance(v, str):
        return v if v in _NAMED_DEFAULTS else repr(v).replace("'", '"')
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_format_default(x) for x in v) + "]"
    if isinstance(v, float):
        # torch prints doubles with 17 significant digits and marks integral ones with a dot ("1.")
        text = "%.17g" % v
        return text + "." if text.lstrip("-").isdigit() else text
    return repr(v)


class _Parser:
    """A recursive-descent parser; errors quote the schema and underline the bad token, as torch's do."""

    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self._fail_at(pos, 1, f"expected a valid token but found '{text[pos]}'")
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group(), pos))
            pos = m.end()
        self.toks.append(("eof", "", len(text)))
        self.i = 0

    def _highlight(self, pos, length) -> str:
        if pos >= len(self.text):
            return self.text  # torch shows no marker past the end
        return f"{self.text}\n{' ' * pos}{'~' * max(length, 1)} <--- HERE\n"

    def _fail_at(self, pos, length, msg):
        raise RuntimeError(f"{msg} here:\n{self._highlight(pos, length)}")

    def _fail_tok(self, tok, want):
        kind, val, pos = tok
        self._fail_at(pos, len(val), f"expected {want} but found '{_kind_name(kind, val)}'")

    def peek(self):
        return self.toks[self.i]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, value=None, kind=None):
        tok = self.next()
        kind_, val, _ = tok
        if (value is not None and (val != value or kind_ == "string")) or (kind is not None and kind_ != kind):
            self._fail_tok(tok, value if value is not None else kind)
        return val

    def accept(self, value):
        if self.peek()[1] == value and self.peek()[0] != "string":
            self.i += 1
            return True
        return False

    # schema := name ['.' overload] '(' args ')' '->' returns
    def schema(self) -> FunctionSchema:
        name = self.expect(kind="ident")
        overload = ""
        if self.accept("."):
            overload = self.expect(kind="ident")
        if self.peek()[1] != "(":
            if self.peek()[0] == "eof":
                raise RuntimeError("Tried to parse a function schema but only the operator name was given")
            self._fail_tok(self.peek(), "eof")
        self.next()
        args = self.arguments()
        self.expect(")")
        self.expect(kind="arrow")
        returns, as_tuple = self.returns()
        if self.peek()[0] != "eof":
            self._fail_tok(self.peek(), "eof")
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise RuntimeError(f"argument '{dup}' appears more than once in schema: {self.text}")
        schema = FunctionSchema(name, overload, tuple(args), tuple(returns), as_tuple)
        seen_default = False
        for a in args:
            if a.kwarg_only:
                break
            if a.has_default:
                seen_default = True
            elif seen_default:
                raise RuntimeError(f"Non-default positional argument follows default argument. "
                                   f"Parameter {a.name} in {schema}")
        return schema

    def arguments(self) -> list[Argument]:
        args: list[Argument] = []
        kwarg_only = False
        if self.peek()[1] == ")":
            return args
        while True:
            if self.accept("*"):
                kwarg_only = True
            else:
                typ, type_tok = self.type_()
                name = self.expect(kind="ident")
                self._check_type(type_tok)
                default = _NO_DEFAULT
                as_scalar = False
                if self.accept("="):
                    as_scalar = typ.is_list and self.peek()[1] not in ("[", "None")
                    default = self.default(typ)
                args.append(Argument(name, typ, default, kwarg_only, as_scalar))
            if not self.accept(","):
                return args

    def _check_type(self, tok):
        kind, base, pos = tok
        if base not in BASE_TYPES:
            raise RuntimeError(
                "\nunknown type specifier. Common valid schema types include Tensor, SymInt, int, float, bool, "
                "Scalar; for a full list, please see "
                "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/README.md#func :\n"
                + self._highlight(pos, len(base)))

    def type_(self):
        """The type at the cursor and its name token (checked by the caller, after the name, as torch does)."""
        tok = self.next()
        kind, base, pos = tok
        if kind != "ident":
            self._fail_tok(tok, "ident")
        alias, is_write, alias_after = None, False, None
        if self.peek()[1] == "(" and base == "Tensor":
            self.next()
            alias = self.expect(kind="ident")
            is_write = self.accept("!")
            if self.peek()[0] == "arrow":  # "Tensor(a -> *)": the list's elements alias a
                self.next()
                alias_after = "*" if self.accept("*") else self.expect(kind="ident")
            self.expect(")")
        elem_optional = is_list = optional = False
        size = None
        if self.accept("?"):
            optional = True
        if self.accept("["):
            is_list = True
            if self.peek()[1] != "]":
                size = int(self.expect(kind="number"))
            self.expect("]")
            elem_optional, optional = optional, False
            if self.accept("?"):
                optional = True
        return SchemaType(base, is_list, size, optional, elem_optional, alias, is_write, alias_after), tok

    def default(self, typ: SchemaType):
        kind, val, pos = self.peek()
        if kind == "ident" and val == "None":
            self.next()
            return None
        if typ.base == "Tensor" and not typ.is_list:
            self._fail_tok(self.peek(), "None")
        if typ.is_list:
            if val == "[":
                self.next()
                items = []
                if not self.accept("]"):
                    while True:
                        items.append(self._scalar_default(typ))
                        if self.accept("]"):
                            break
                        self.expect(",")
                return tuple(items)
            if not typ.list_size:
                self._fail_tok(self.peek(), "[")
            # "int[2] stride=1" means [1, 1]
            return (self._scalar_default(typ),) * typ.list_size
        return self._scalar_default(typ)

    def _scalar_default(self, typ):
        tok = self.next()
        kind, val, pos = tok
        if kind == "number":
            return float(val) if any(c in val for c in ".eE") else int(val)
        if kind == "string":
            return val[1:-1]
        if val == "-" and kind == "punct":
            nxt = self.peek()
            if nxt[1] == "inf":
                self.next()
                return -math.inf
            if nxt[0] == "number" and not nxt[1].startswith("-"):
                return -self._scalar_default(typ)
            self._fail_tok(tok, "number")
        if kind == "ident":
            if val in _NAMED_DEFAULTS:
                return _NAMED_DEFAULTS[val]
            if typ.base in _IDENT_DEFAULT_TYPES:
                return val  # dtype names such as "long"
            raise RuntimeError("\ninvalid numeric default value:\n" + self._highlight(pos, len(val)))
        self._fail_tok(tok, "number")

    def returns(self):
        if self.accept("("):
            rets = []
            if not self.accept(")"):
                while True:
                    rets.append(self._return())
                    if self.accept(")"):
                        break
                    self.expect(",")
            return rets, True
        return [self._return()], False

    def _return(self) -> Return:
        typ, tok = self.type_()
        self._check_type(tok)
        name = None
        if self.peek()[0] == "ident":
            name = self.next()[1]
        return Return(typ, name)


def _kind_name(kind: str, val: str) -> str:
    """How torch's lexer names a token in "expected X but found 'Y'"."""
    if kind in ("ident", "number", "arrow", "eof"):
        return kind
    if kind == "string":
        return "string_literal"
    return val


# "name.overload" right before the "(": what a schema's argument list and returns follow
_HEAD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)?)(?:\.([A-Za-z_][A-Za-z0-9_]*))?(?=\()")
# "(Tensor self, Tensor other) -> Tensor" -> its parsed (arguments, returns, returns_tuple). Half of aten's
# schemas repeat another's argument list and returns; the parts are immutable, so schemas can share them.
_PARSED_TAILS: dict = {}


def parse_schema(text: str) -> FunctionSchema:
    """Parse ``text``; RuntimeError naming the bad token if it is malformed."""
    if not isinstance(text, str):
        raise TypeError(f"schema must be a str, got {type(text).__name__}")
    text = text.strip()
    head = _HEAD.match(text)
    if head is not None:
        parts = _PARSED_TAILS.get(text[head.end():])
        if parts is not None:
            return FunctionSchema(head.group(1), head.group(2) or "", *parts)
    schema = _Parser(text).schema()
    if head is not None:
        _PARSED_TAILS[text[head.end():]] = (schema.arguments, schema.returns, schema.returns_tuple)
    return schema
