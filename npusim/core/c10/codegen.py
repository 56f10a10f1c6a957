"""Python source generated at run time: dispatch functions and device-guard, capacity-check and complex-check
wrappers.

A wrapper that takes exactly its operator's parameters (no ``*args``/``**kwargs`` packing) is what keeps a
call cheap, and such a wrapper has to be written out per signature. Every generator builds its source here:

- ``Signature`` turns a schema or a Python signature into a parameter list, the call that forwards it, and
  the positional tuple / keyword dict a slow path takes;
- ``compile_function`` compiles a source once per distinct text (many overloads share a signature) and
  names each function it makes with a file name of its own, ``<KIND NAME #N>``, whose source is
  registered with ``linecache``: tracebacks, ``inspect.getsource`` and pdb show the generated lines;
- a registry keeps every generated source by the name it serves (``aten::add.Tensor``), so
  ``source_of(name_or_function)`` prints it.

``GENERATED_PREFIXES`` are the file-name prefixes of all generated code: the stack walks of
``user_frames`` count those frames as npusim's own.
"""
from __future__ import annotations

import itertools
import keyword
import linecache
import threading
import types
from dataclasses import dataclass

__all__ = ["DISPATCH", "DEVICE_GUARD", "CAPACITY_CHECK", "COMPLEX_CHECK", "KINDS", "GENERATED_PREFIXES", "Param",
           "Signature", "if_any", "pyname", "compile_function", "named_code", "inner_codes", "name_function",
           "source_of", "generated", "is_generated_filename"]

# the kinds of generated code, in the order a call meets them
DISPATCH = "dispatch"
DEVICE_GUARD = "device guard"
CAPACITY_CHECK = "capacity check"
COMPLEX_CHECK = "complex check"     # native/complex_support.py: ops that refuse complex arguments
KINDS = (DISPATCH, DEVICE_GUARD, CAPACITY_CHECK, COMPLEX_CHECK)
GENERATED_PREFIXES = tuple(f"<{kind} " for kind in KINDS)


def is_generated_filename(filename: str) -> bool:
    return filename.startswith(GENERATED_PREFIXES)


def pyname(name: str) -> str:
    """A schema argument's Python parameter name (``from`` -> ``from_``)."""
    return name + "_" if keyword.iskeyword(name) else name


_NO_DEFAULT = object()


@dataclass(frozen=True)
class Param:
    """One parameter: ``name`` in the generated code, ``keyword`` as the generated call passes it on, ``key``
    in the keyword dict a slow path gets (the schema's spelling, where it differs)."""
    name: str
    keyword: str
    kwarg_only: bool = False
    default: object = _NO_DEFAULT
    key: str = ""

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


class Signature:
    """A parameter list and the ways generated code forwards it.

    ``defaults`` maps the names chosen for default values (which become parameters of the ``_make``
    function around the generated one) to the values; ``fresh`` hands out helper names no parameter shadows.
    """

    def __init__(self, params, reserved=(), default_name="_d_{name}"):
        self.params = list(params)
        self.taken = {p.name for p in self.params} | set(reserved)
        self.defaults: dict = {}
        self.default_of: dict = {}      # parameter name -> the name of its default value
        pieces, star = [], False
        for i, p in enumerate(self.params):
            if p.kwarg_only and not star:
                pieces.append("*")
                star = True
            if p.has_default:
                d = self.fresh(default_name.format(name=p.name, i=i))
                self.defaults[d] = p.default
                self.default_of[p.name] = d
                pieces.append(f"{p.name}={d}")
            else:
                pieces.append(p.name)
        self.parameters = ", ".join(pieces)
        self.positional = [p.name for p in self.params if not p.kwarg_only]
        self.call = ", ".join(f"{p.keyword}={p.name}" if p.kwarg_only else p.name for p in self.params)
        self.args_tuple = "(" + "".join(n + ", " for n in self.positional) + ")"
        self.kwargs_dict = "{" + ", ".join(f"{(p.key or p.keyword)!r}: {p.name}"
                                           for p in self.params if p.kwarg_only) + "}"

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            name = "_" + name
        self.taken.add(name)
        return name

    @classmethod
    def of_schema(cls, schema, reserved=(), default_name="_d_{name}", schema_keys=True):
        """From a FunctionSchema; ``schema_keys``: the keyword dict spells names as the schema does."""
        return cls([Param(pyname(a.name), pyname(a.name), a.kwarg_only, a.default if a.has_default else _NO_DEFAULT,
                          a.name if schema_keys else "")
                    for a in schema.arguments], reserved, default_name)

    @classmethod
    def of_callable(cls, sig, reserved=(), default_name="_d_{name}"):
        """From ``inspect.signature``; None when it packs (``*args``, ``**kwargs``) or has positional-only ones."""
        params = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
                return None
            params.append(Param(p.name, p.name, p.kind is p.KEYWORD_ONLY,
                                _NO_DEFAULT if p.default is p.empty else p.default))
        return cls(params, reserved, default_name)


def if_any(conditions) -> list:
    """The lines of ``if c1 or c2 ...:``, one condition a line (the body is the caller's, indented once)."""
    if len(conditions) == 1:
        return [f"if {conditions[0]}:"]
    return ([f"if ({conditions[0]}"] + [f"        or {c}" for c in conditions[1:-1]]
            + [f"        or {conditions[-1]}):"])


def indent(lines, depth: int = 1) -> str:
    pad = "    " * depth
    return "".join(f"{pad}{line}\n" for line in lines)


# --- compiling and naming --------------------------------------------------------------------------------------

_lock = threading.Lock()
_counter = itertools.count()
_HAS_QUALNAME = hasattr(indent.__code__, "co_qualname")   # Python 3.11+


@dataclass(frozen=True)
class Generated:
    kind: str
    name: str          # what it serves: "aten::add.Tensor"
    filename: str      # "<dispatch aten::add.Tensor #12>"
    source: str


# served name -> kind -> the latest Generated; filename -> Generated (what a frame's file name leads to)
_BY_NAME: dict = {}
_BY_FILENAME: dict = {}
# a compiled source -> its module code's namespace: one compile per distinct text
_COMPILED: dict = {}


def _register(gen: Generated) -> None:
    lines = gen.source.splitlines(keepends=True)
    # mtime None: linecache.checkcache leaves the entry alone (there is no file to compare with)
    linecache.cache[gen.filename] = (len(gen.source), None, lines, gen.filename)
    with _lock:
        if gen.name:    # a template serves no op until a function made from it is named
            _BY_NAME.setdefault(gen.name, {})[gen.kind] = gen
        _BY_FILENAME[gen.filename] = gen


def compile_function(source: str, kind: str, globals_: dict | None = None, entry: str = "_make"):
    """The function ``entry`` defined by ``source``, compiled once per distinct (source, globals).

    The source is compiled under ``<KIND>`` (no name yet): ``name_function`` gives each function made
    from it a file name of its own.
    """
    key = (source, kind, id(globals_))
    namespace = _COMPILED.get(key)
    if namespace is None:
        namespace = {}
        filename = f"<{kind} template #{next(_counter)}>"
        code = compile(source, filename, "exec")
        _register(Generated(kind, "", filename, source))
        exec(code, {} if globals_ is None else globals_, namespace)   # noqa: S102 - our own generated source
        _COMPILED[key] = namespace
    return namespace[entry]


def _source_of_code(code) -> str:
    gen = _BY_FILENAME.get(code.co_filename)
    return gen.source if gen is not None else ""


def named_code(code, kind: str, served: str, name: str | None = None):
    """``code`` (of a function a ``compile_function`` source made) under its own file name ``<KIND SERVED #N>``,
    and renamed ``name`` if given: its frames say which op they serve, and ``source_of(served)`` finds the source."""
    filename = f"<{kind} {served} #{next(_counter)}>"
    changes = {"co_filename": filename}
    if name is not None:
        changes["co_name"] = name
        if _HAS_QUALNAME:
            changes["co_qualname"] = name
    _register(Generated(kind, served, filename, _source_of_code(code)))
    return code.replace(**changes)


def inner_codes(make) -> list:
    """The code objects of the functions ``make`` (a ``compile_function`` result) defines inside itself."""
    return [c for c in make.__code__.co_consts if isinstance(c, types.CodeType)]


def name_function(func, kind: str, served: str, name: str | None = None):
    """Give ``func`` its own file name and (if given) ``name``, as ``named_code`` does; returns ``func``."""
    func.__code__ = named_code(func.__code__, kind, served, name)
    if name is not None:
        func.__name__ = func.__qualname__ = name
    return func


def generated(served: str) -> dict:
    """``{kind: Generated}`` of the code generated so far for ``served`` (an op name such as ``aten::add.Tensor``)."""
    with _lock:
        return dict(_BY_NAME.get(served, {}))


def source_of(target) -> str:
    """The generated source behind ``target``: a served name (every kind generated for it, each headed by
    its file name), a generated function, a wrapper whose ``__wrapped__`` chain reaches one, or a file name."""
    if isinstance(target, str):
        gen = _BY_FILENAME.get(target)
        if gen is not None:
            return gen.source
        found = generated(target)
        if not found:
            raise KeyError(f"no code has been generated for {target!r}")
        return "\n".join(f"# {found[k].filename}\n{found[k].source}" for k in KINDS if k in found)
    f = target
    while f is not None:
        code = getattr(f, "__code__", None)
        if code is not None and is_generated_filename(code.co_filename):
            src = _source_of_code(code)
            if src:
                return src
        f = getattr(f, "__wrapped__", None)
    raise KeyError(f"{target!r} is not generated code")
