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
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device",
    "Layout", "MemoryFormat", "Generator", "Storage", "Dimname", "Any",
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

    @property
    def is_tensor_like(self) -> bool:
        return self.base == "Tensor"

    def __str__(self):
        s = self.base
        if self.alias is not None:
            s += f"({self.alias}{'!' if self.is_write else ''})"
        if self.elem_optional:
            s += "?"
        if self.is_list:
            s += f"[{self.list_size if self.list_size else ''}]"
        if self.optional:
            s += "?"
        return s


_NO_DEFAULT = object()


@dataclass(frozen=True)
class Argument:
    name: str
    type: SchemaType
    default: object = _NO_DEFAULT
    kwarg_only: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def __str__(self):
        s = f"{self.type} {self.name}"
        if self.has_default:
            s += "=" + _format_default(self.default)
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
        if len(self.returns) == 1 and not self.returns_tuple:
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
    return repr(v)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self._fail_at(pos, f"unexpected character '{text[pos]}'")
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group(), pos))
            pos = m.end()
        self.toks.append(("eof", "", len(text)))
        self.i = 0

    def _fail_at(self, pos, msg):
        raise RuntimeError(f"{msg} here:\n{self.text}\n{' ' * pos}^")

    def peek(self):
        return self.toks[self.i]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, value=None, kind=None):
        kind_, val, pos = self.next()
        if (value is not None and val != value) or (kind is not None and kind_ != kind):
            want = value if value is not None else kind
            got = "end of source" if kind_ == "eof" else (kind_ if kind_ in ("arrow",) else f"'{val}'")
            self._fail_at(pos, f"expected {want} but found {got}")
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
        self.expect("(")
        args = self.arguments()
        self.expect(")")
        if self.peek()[0] != "arrow":
            self.expect("->")
        self.next()
        returns, as_tuple = self.returns()
        if self.peek()[0] != "eof":
            self._fail_at(self.peek()[2], f"expected end of schema but found '{self.peek()[1]}'")
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise RuntimeError(f"argument '{dup}' appears more than once in schema: {self.text}")
        return FunctionSchema(name, overload, tuple(args), tuple(returns), as_tuple)

    def arguments(self) -> list[Argument]:
        args: list[Argument] = []
        kwarg_only = False
        if self.peek()[1] == ")":
            return args
        while True:
            if self.accept("*"):
                kwarg_only = True
            else:
                typ = self.type_()
                name = self.expect(kind="ident")
                default = _NO_DEFAULT
                if self.accept("="):
                    default = self.default(typ)
                elif args and args[-1].has_default and not kwarg_only:
                    raise RuntimeError(
                        f"non-default argument '{name}' follows default argument in schema: {self.text}")
                args.append(Argument(name, typ, default, kwarg_only))
            if not self.accept(","):
                return args

    def type_(self) -> SchemaType:
        kind, base, pos = self.next()
        if kind != "ident" or base not in BASE_TYPES:
            got = "end of source" if kind == "eof" else f"'{base}'"
            raise RuntimeError(
                "unknown type specifier " + got + ". Common valid schema types include Tensor, SymInt, "
                f"int, float, bool, Scalar:\n{self.text}\n{' ' * pos}^")
        alias, is_write = None, False
        if self.peek()[1] == "(" and base == "Tensor":
            self.next()
            alias = self.expect(kind="ident")
            is_write = self.accept("!")
            if self.peek()[0] == "arrow":  # "Tensor(a -> *)": the list's elements alias a
                self.next()
                if not self.accept("*"):
                    self.expect(kind="ident")
            self.expect(")")
        elem_optional = is_list = optional = False
        size = None
        if self.accept("?"):
            optional = True
        if self.accept("["):
            is_list = True
            if self.peek()[0] == "number":
                size = int(self.next()[1])
            self.expect("]")
            elem_optional, optional = optional, False
            if self.accept("?"):
                optional = True
        return SchemaType(base, is_list, size, optional, elem_optional, alias, is_write)

    def default(self, typ: SchemaType):
        kind, val, pos = self.peek()
        if val == "[":
            self.next()
            items = []
            if not self.accept("]"):
                while True:
                    items.append(self._scalar_default())
                    if self.accept("]"):
                        break
                    self.expect(",")
            return tuple(items)
        v = self._scalar_default()
        if typ.is_list and isinstance(v, int) and not isinstance(v, bool):
            # "int[2] stride=1" means [1, 1]
            return (v,) * (typ.list_size or 1)
        return v

    def _scalar_default(self):
        kind, val, pos = self.next()
        if kind == "number":
            return float(val) if any(c in val for c in ".eE") else int(val)
        if kind == "string":
            return val[1:-1]
        if kind == "ident" and val in _NAMED_DEFAULTS:
            return _NAMED_DEFAULTS[val]
        if kind == "ident":
            return val  # dtype names such as "long"
        if val == "-" and self.peek()[1] == "inf":
            self.next()
            return -math.inf
        self._fail_at(pos, f"expected a default value but found '{val}'")

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
        typ = self.type_()
        name = None
        if self.peek()[0] == "ident":
            name = self.next()[1]
        return Return(typ, name)


def parse_schema(text: str) -> FunctionSchema:
    """Parse ``text``; RuntimeError naming the bad token if it is malformed."""
    if not isinstance(text, str):
        raise TypeError(f"schema must be a str, got {type(text).__name__}")
    return _Parser(text.strip()).schema()
