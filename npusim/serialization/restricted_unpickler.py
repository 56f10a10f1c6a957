"""The safe (``weights_only=True``) unpickler: a small pickle interpreter with an allow-list.

It executes pickle opcodes itself (as torch's ``_weights_only_unpickler``
does) instead of trusting ``pickle.Unpickler``: globals come only from the
allow-list, REDUCE/NEWOBJ call only allowed callables, BUILD sets state only on
tensors, OrderedDicts and allowed types (never over their methods),
APPEND/SETITEM work only on lists and dicts, and containers nest at most
``MAX_NESTING_DEPTH`` deep. Every read is bounds-checked, so a malformed
``data.pkl`` raises ``UnpicklingError`` saying where and what.
"""
from __future__ import annotations

import _compat_pickle
import struct
from collections import Counter, OrderedDict

from ..core.tensor import Tensor
from .allowed_globals import BLOCKED_MODULES, builtin_globals, unsupported_torch_global
from .errors import ArchiveError, UnpicklingError
from .safe_globals import user_allowed_globals


class DisallowedGlobal(UnpicklingError):
    """A global outside the allow-list (the message says how to allow it)."""


class _StorageLoadFailed(Exception):
    """Carries an error raised while loading a storage (a device or map_location problem) out unchanged."""

    def __init__(self, error):
        self.error = error


_unpack_i = struct.Struct("<i").unpack_from
_unpack_H = struct.Struct("<H").unpack_from
_unpack_I = struct.Struct("<I").unpack_from
_unpack_Q = struct.Struct("<Q").unpack_from
_unpack_d = struct.Struct(">d").unpack_from
_MARK = object()  # never exposed: marks are kept on the metastack

# Containers nested deeper than this are refused: hashing a tuple recurses on the C stack without a
# recursion check, so a million nested tuples used as a dict key or set item kill the interpreter. Python's
# own pickler cannot write objects this deep at its default recursion limit; raise it here to load deeper.
MAX_NESTING_DEPTH = 1000


def map_global(module: str, name: str):
    """Protocol 2 spells Python 3 names the Python 2 way (``__builtin__ set``); map them back."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return module, name


def _display_name(full_path: str) -> str:
    """How torch shows a global in its message (builtins without the module)."""
    if full_path.startswith("builtins."):
        return full_path[len("builtins."):]
    return full_path


class RestrictedUnpickler:
    def __init__(self, data: bytes, persistent_load, *, encoding: str = "utf-8"):
        self._data = data
        self._pos = 0
        self._persistent_load = persistent_load
        self._encoding = encoding
        self._builtin = builtin_globals()
        self._user = user_allowed_globals()
        self._allowed_ids = {id(v) for v in self._builtin.values()} | {id(v) for v in self._user.values()}
        self._user_types = {id(v) for v in self._user.values() if isinstance(v, type)}
        self._parameter = None
        self._max_depth = MAX_NESTING_DEPTH
        self._depths: dict = {}  # id(object) -> nesting depth, for depths past 1 (most containers are 1)
        self._keep: list = []    # the containers measured, kept alive so that their ids stay theirs

    # --- reading -----------------------------------------------------------------------------------------
    def _read(self, n: int) -> bytes:
        pos = self._pos
        end = pos + n
        if n < 0 or end > len(self._data):
            raise UnpicklingError(f"data.pkl is truncated: {n} bytes are needed at byte {pos}, but only "
                                  f"{len(self._data) - pos} remain")
        self._pos = end
        return self._data[pos:end]

    def _readline(self) -> bytes:
        pos = self._pos
        end = self._data.find(b"\n", pos)
        if end < 0:
            raise UnpicklingError(f"data.pkl is truncated: a text argument at byte {pos} has no end of line")
        self._pos = end + 1
        return self._data[pos:end]

    # --- the interpreter ----------------------------------------------------------------------------------
    def load(self):
        try:
            return self._run()
        except _StorageLoadFailed as failed:
            raise failed.error from None
        except (UnpicklingError, ArchiveError):
            raise
        except RecursionError:
            raise UnpicklingError("data.pkl nests objects too deeply to load") from None
        except RuntimeError:
            raise  # device and storage errors from rebuilding tensors: already clear
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError, struct.error,
                UnicodeDecodeError, EOFError) as e:
            raise UnpicklingError(f"data.pkl is malformed (opcode ending at byte {self._pos}): "
                                  f"{type(e).__name__}: {e}") from None

    def _run(self):
        self._stack = stack = []
        self._metastack = []
        self._memo = {}
        dispatch = _DISPATCH
        data = self._data
        n = len(data)
        while True:
            pos = self._pos
            if pos >= n:
                raise UnpicklingError("data.pkl is truncated: it ends before its STOP opcode")
            op = data[pos]
            self._pos = pos + 1
            handler = dispatch.get(op)
            if handler is None:
                raise UnpicklingError(f"Unsupported operand {op} at byte {pos} of data.pkl")
            if handler is _stop:
                stack = self._stack
                if not stack:
                    raise UnpicklingError("data.pkl is malformed: STOP with nothing on the stack")
                if self._metastack:
                    raise UnpicklingError("data.pkl is malformed: STOP inside an unfinished MARK")
                return stack.pop()
            handler(self)

    def _pop_mark(self):
        if not self._metastack:
            raise UnpicklingError(f"data.pkl is malformed: no MARK before the opcode ending at byte {self._pos}")
        items = self._stack
        self._stack = self._metastack.pop()
        return items

    def _append(self, value):
        self._stack.append(value)

    # --- nesting depth ------------------------------------------------------------------------------------
    def _deepest(self, items) -> int:
        """The nesting depth of the deepest of ``items`` (0 when none is a container)."""
        get = self._depths.get
        deepest = 0
        for x in items:
            t = type(x)
            if t not in _ATOMS:
                d = get(id(x)) or _LEAF_DEPTH.get(t, 0)
                if d > deepest:
                    deepest = d
        return deepest

    def _nest(self, container, items):
        """Record ``container`` as one level above the deepest of ``items``."""
        self._record(container, self._deepest(items) + 1)
        return container

    def _record(self, obj, depth: int) -> None:
        if depth > 1:  # containers of atoms count 1 without being recorded, as most containers are
            if depth > self._max_depth:
                self._too_deep()
            self._depths[id(obj)] = depth
            self._keep.append(obj)

    def _nest_into(self, target, items):
        """``items`` were added to the mutable ``target``: it is now at least one level above each."""
        depth = self._deepest(items) + 1
        if depth > 1 and depth > self._depths.get(id(target), 1):
            self._record(target, depth)

    def _too_deep(self):
        raise UnpicklingError(f"data.pkl nests containers more than {self._max_depth} levels deep (at the opcode "
                              f"ending at byte {self._pos}), which could crash the interpreter when they are "
                              "hashed: npusim.serialization.restricted_unpickler.MAX_NESTING_DEPTH limits it")

    # --- globals and calls --------------------------------------------------------------------------------
    def _find_global(self, module: str, name: str):
        module, name = map_global(module, name)
        full_path = f"{module}.{name}"
        if module in BLOCKED_MODULES or module.split(".")[0] in BLOCKED_MODULES:
            raise DisallowedGlobal(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is "
                                   "blocked.")
        obj = self._builtin.get(full_path)
        if obj is not None:
            return obj
        obj = self._user.get(full_path)
        if obj is not None:
            return obj
        unsupported = unsupported_torch_global(full_path)
        if unsupported is not None:
            raise unsupported
        shown = _display_name(full_path)
        raise DisallowedGlobal(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
            f"`npusim.serialization.add_safe_globals([{shown}])` or the "
            f"`npusim.serialization.safe_globals([{shown}])` context manager to allowlist this global if you "
            "trust this class/function.")

    def _check_callable(self, func, what):
        if id(func) not in self._allowed_ids:
            raise UnpicklingError(f"Trying to call {what} for unrecognized function {type(func).__name__}")
        if isinstance(func, type) and issubclass(func, Tensor):  # the legacy constructor would allocate any size
            raise UnpicklingError(f"Trying to call {what} for {func.__name__}: archives rebuild tensors from their "
                                  "storages, never by calling the tensor class")

    def _new_object(self, cls, args, kwargs):
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise UnpicklingError("NEWOBJ arguments must be a tuple (and a dict)")
        parameter = self._builtin["torch.nn.parameter.Parameter"]
        if cls is parameter:
            return parameter(*args, **kwargs)
        if isinstance(cls, type) and id(cls) in self._allowed_ids and not issubclass(cls, Tensor):
            return cls.__new__(cls, *args, **kwargs)
        if isinstance(cls, type) and id(cls) in self._user_types:
            return cls.__new__(cls, *args, **kwargs)
        raise UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted via "
                              f"`add_safe_globals` but got {cls!r}" if isinstance(cls, type) else
                              "Can only create new object for nn.Parameter or classes allowlisted via "
                              f"`add_safe_globals` but got a {type(cls).__name__}")

    def _build(self, inst, state):
        from .rebuild import set_obj_state
        t = type(inst)
        if isinstance(inst, Tensor) and (t is Tensor or id(t) not in self._user_types):
            set_obj_state(inst, state)
        elif t is OrderedDict or t is Counter:
            if not isinstance(state, dict) or not all(type(k) is str and not k.startswith("__") for k in state):
                raise UnpicklingError("the state of an OrderedDict must be a dict of attribute names")
            _check_state_names(t, state, slots=False)
            inst.__dict__.update(state)
        elif id(t) in self._user_types:
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)  # the class interprets its own state
            else:
                slotstate = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slotstate = state
                if state:
                    _check_state_names(t, state, slots=False)
                if slotstate:
                    _check_state_names(t, slotstate, slots=True)
                if state:
                    inst.__dict__.update(state)
                if slotstate:
                    for k, v in slotstate.items():
                        setattr(inst, k, v)
        else:
            raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                  f"`add_safe_globals`, but got {t.__name__}")


def _check_state_names(cls, state, *, slots: bool) -> None:
    """Refuse pickled state that would replace a method (or other class behaviour) of ``cls`` on the instance.

    Plain class-level values (defaults that instances override) may be set; with ``slots``, so may data
    descriptors (slots and properties with setters, which ``setattr`` goes through).
    """
    if not isinstance(state, dict):
        raise UnpicklingError(f"Invalid serialized state for {cls.__name__}: expected a dict of attributes, got "
                              f"{type(state).__name__}")
    for k in state:
        if type(k) is not str:
            if slots:
                raise UnpicklingError(f"Invalid serialized state for {cls.__name__}: slot names must be str, got "
                                      f"{type(k).__name__}")
            continue
        shadowed = k.startswith("__") and k.endswith("__")
        if not shadowed:
            for klass in cls.__mro__:
                if k in klass.__dict__:
                    attr = klass.__dict__[k]
                    shadowed = (callable(attr) or hasattr(type(attr), "__get__")) and not (
                        slots and hasattr(type(attr), "__set__"))
                    break
        if shadowed:
            raise UnpicklingError(f"Invalid serialized state: attribute {k!r} of {cls.__name__} cannot be set from "
                                  f"an archive: it would replace {cls.__name__}.{k}")


# --- opcode handlers (one per opcode; ``self`` is the unpickler) -------------------------------------------

def _stop(self):  # handled in the loop
    raise AssertionError


def _proto(self):
    self._read(1)


def _frame(self):
    self._read(8)


def _mark(self):
    self._metastack.append(self._stack)
    self._stack = []


def _pop(self):
    if self._stack:
        self._stack.pop()
    else:
        self._pop_mark()


def _pop_mark_op(self):
    self._pop_mark()


def _dup(self):
    self._stack.append(self._stack[-1])


def _none(self):
    self._stack.append(None)


def _newtrue(self):
    self._stack.append(True)


def _newfalse(self):
    self._stack.append(False)


def _int(self):
    line = self._readline()
    if line == b"00":
        value = False
    elif line == b"01":
        value = True
    else:
        value = int(line)
    self._stack.append(value)


def _binint(self):
    self._stack.append(_unpack_i(self._read(4))[0])


def _binint1(self):
    self._stack.append(self._read(1)[0])


def _binint2(self):
    self._stack.append(_unpack_H(self._read(2))[0])


def _long(self):
    line = self._readline()
    if line.endswith(b"L"):
        line = line[:-1]
    self._stack.append(int(line))


def _long1(self):
    n = self._read(1)[0]
    self._stack.append(int.from_bytes(self._read(n), "little", signed=True))


def _long4(self):
    n = _unpack_i(self._read(4))[0]
    if n < 0:
        raise UnpicklingError("LONG pickle has negative byte count")
    self._stack.append(int.from_bytes(self._read(n), "little", signed=True))


def _float(self):
    self._stack.append(float(self._readline()))


def _binfloat(self):
    self._stack.append(_unpack_d(self._read(8))[0])


def _decode_str8(self, data: bytes):
    if self._encoding == "bytes":
        return data
    return data.decode(self._encoding, "strict")


def _binstring(self):
    n = _unpack_i(self._read(4))[0]
    if n < 0:
        raise UnpicklingError("BINSTRING pickle has negative byte count")
    self._stack.append(_decode_str8(self, self._read(n)))


def _short_binstring(self):
    n = self._read(1)[0]
    self._stack.append(_decode_str8(self, self._read(n)))


def _binbytes(self):
    self._stack.append(bytes(self._read(_unpack_I(self._read(4))[0])))


def _short_binbytes(self):
    self._stack.append(bytes(self._read(self._read(1)[0])))


def _binbytes8(self):
    self._stack.append(bytes(self._read(_unpack_Q(self._read(8))[0])))


def _bytearray8(self):
    self._stack.append(bytearray(self._read(_unpack_Q(self._read(8))[0])))


def _unicode(self):
    self._stack.append(str(self._readline(), "raw-unicode-escape"))


def _binunicode(self):
    self._stack.append(str(self._read(_unpack_I(self._read(4))[0]), "utf-8", "surrogatepass"))


def _short_binunicode(self):
    self._stack.append(str(self._read(self._read(1)[0]), "utf-8", "surrogatepass"))


def _binunicode8(self):
    self._stack.append(str(self._read(_unpack_Q(self._read(8))[0]), "utf-8", "surrogatepass"))


def _empty_tuple(self):
    self._stack.append(())


def _tuple(self):
    items = self._pop_mark()  # before reading self._stack: popping the mark replaces it
    self._stack.append(self._nest(tuple(items), items))


def _tuple1(self):
    item = self._stack[-1]
    t = (item,)
    if type(item) in _ATOMS:
        self._stack[-1] = t
        return
    depths = self._depths
    depth = depths.get(id(item), _LEAF_DEPTH.get(type(item), 0)) + 1  # inline: the commonest tuples
    if depth > 1:
        if depth > self._max_depth:
            self._too_deep()
        depths[id(t)] = depth
        self._keep.append(t)
    self._stack[-1] = t


def _tuple2(self):
    s = self._stack
    if len(s) < 2:
        raise UnpicklingError("data.pkl is malformed: TUPLE2 needs two items on the stack")
    a, b = s[-2], s[-1]
    t = (a, b)
    if type(a) in _ATOMS and type(b) in _ATOMS:
        s[-2:] = [t]
        return
    depths = self._depths
    da = depths.get(id(a), _LEAF_DEPTH.get(type(a), 0))
    db = depths.get(id(b), _LEAF_DEPTH.get(type(b), 0))
    depth = (da if da > db else db) + 1
    if depth > 1:
        if depth > self._max_depth:
            self._too_deep()
        depths[id(t)] = depth
        self._keep.append(t)
    s[-2:] = [t]


def _tuple3(self):
    s = self._stack
    if len(s) < 3:
        raise UnpicklingError("data.pkl is malformed: TUPLE3 needs three items on the stack")
    t = (s[-3], s[-2], s[-1])
    s[-3:] = [self._nest(t, t)]


def _empty_list(self):
    self._stack.append([])


def _list(self):
    items = self._pop_mark()
    self._stack.append(self._nest(items, items))


def _empty_dict(self):
    self._stack.append({})


def _dict(self):
    items = self._pop_mark()
    if len(items) % 2:
        raise UnpicklingError("data.pkl is malformed: DICT needs key/value pairs")
    self._stack.append(self._nest({items[i]: items[i + 1] for i in range(0, len(items), 2)}, items))


def _empty_set(self):
    self._stack.append(set())


def _frozenset(self):
    items = self._pop_mark()
    self._stack.append(self._nest(frozenset(items), items))


def _check_target(self, kinds, opcode):
    target = self._stack[-1]
    if type(target) not in kinds:
        names = {list: "lists", set: "sets"}
        if kinds is _DICT_KINDS:
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, but "
                                  f"got {type(target).__name__}")
        raise UnpicklingError(f"Can only {opcode} to {names[kinds[0]]}, but got {type(target).__name__}")
    return target


# the nesting depth of a container no other container is recorded for: 1 (not recorded, as most are)
_LEAF_DEPTH = {tuple: 1, list: 1, dict: 1, set: 1, frozenset: 1, OrderedDict: 1, Counter: 1}
_ATOMS = frozenset({int, float, str, bytes, bool, type(None)})  # never containers: no depth to look up

_DICT_KINDS = (dict, OrderedDict, Counter)
_LIST_KINDS = (list,)
_SET_KINDS = (set,)


def _append_op(self):
    item = self._stack.pop()
    target = _check_target(self, _LIST_KINDS, "append")
    self._nest_into(target, (item,))
    target.append(item)


def _appends(self):
    items = self._pop_mark()
    target = _check_target(self, _LIST_KINDS, "extend")
    self._nest_into(target, items)
    target.extend(items)


def _additems(self):
    items = self._pop_mark()
    target = _check_target(self, _SET_KINDS, "add items")
    self._nest_into(target, items)
    target.update(items)


def _setitem(self):
    value = self._stack.pop()
    key = self._stack.pop()
    target = _check_target(self, _DICT_KINDS, "SETITEM")
    self._nest_into(target, (key, value))
    target[key] = value


def _setitems(self):
    items = self._pop_mark()
    if len(items) % 2:
        raise UnpicklingError("data.pkl is malformed: SETITEMS needs key/value pairs")
    target = _check_target(self, _DICT_KINDS, "SETITEMS")
    self._nest_into(target, items)
    for i in range(0, len(items), 2):
        target[items[i]] = items[i + 1]


def _get(self):
    self._stack.append(self._memo[int(self._readline())])


def _binget(self):
    self._stack.append(self._memo[self._read(1)[0]])


def _long_binget(self):
    self._stack.append(self._memo[_unpack_I(self._read(4))[0]])


def _put(self):
    i = int(self._readline())
    if i < 0:
        raise UnpicklingError("data.pkl is malformed: negative PUT index")
    self._memo[i] = self._stack[-1]


def _binput(self):
    self._memo[self._read(1)[0]] = self._stack[-1]


def _long_binput(self):
    self._memo[_unpack_I(self._read(4))[0]] = self._stack[-1]


def _memoize(self):
    self._memo[len(self._memo)] = self._stack[-1]


def _global(self):
    module = self._readline().decode("utf-8")
    name = self._readline().decode("utf-8")
    self._stack.append(self._find_global(module, name))


def _stack_global(self):
    name = self._stack.pop()
    module = self._stack.pop()
    if type(name) is not str or type(module) is not str:
        raise UnpicklingError("STACK_GLOBAL requires str")
    self._stack.append(self._find_global(module, name))


def _reduce(self):
    args = self._stack.pop()
    func = self._stack[-1]
    self._check_callable(func, "reduce")
    if not isinstance(args, tuple):
        raise UnpicklingError(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
    result = func(*args)
    self._record(result, self._depths.get(id(args), 1))  # as deep as its arguments, one level of which it replaces
    self._stack[-1] = result


def _newobj(self):
    args = self._stack.pop()
    cls = self._stack.pop()
    result = self._new_object(cls, args, {})
    self._record(result, self._depths.get(id(args), 1))
    self._stack.append(result)


def _newobj_ex(self):
    kwargs = self._stack.pop()
    args = self._stack.pop()
    cls = self._stack.pop()
    self._stack.append(self._nest(self._new_object(cls, args, kwargs), (args, kwargs)))


def _build_op(self):
    state = self._stack.pop()
    inst = self._stack[-1]
    self._nest_into(inst, (state,))
    self._build(inst, state)


def _binpersid(self):
    pid = self._stack.pop()
    if type(pid) is not tuple:
        raise UnpicklingError(f"persistent_load id must be a tuple, but got {type(pid).__name__}")
    try:
        storage = self._persistent_load(pid)
    except Exception as e:
        raise _StorageLoadFailed(e) from None
    self._stack.append(storage)


def _persid(self):
    raise UnpicklingError("text persistent ids (PERSID) are not used by archives: only storages may be "
                          "persistent, through BINPERSID")


_DISPATCH = {
    ord("."): _stop, 0x80: _proto, 0x95: _frame, ord("("): _mark, ord("0"): _pop, ord("1"): _pop_mark_op,
    ord("2"): _dup, ord("N"): _none, 0x88: _newtrue, 0x89: _newfalse, ord("I"): _int, ord("J"): _binint,
    ord("K"): _binint1, ord("M"): _binint2, ord("L"): _long, 0x8A: _long1, 0x8B: _long4, ord("F"): _float,
    ord("G"): _binfloat, ord("T"): _binstring, ord("U"): _short_binstring, ord("B"): _binbytes,
    ord("C"): _short_binbytes, 0x8E: _binbytes8, 0x96: _bytearray8, ord("V"): _unicode, ord("X"): _binunicode,
    0x8C: _short_binunicode, 0x8D: _binunicode8, ord(")"): _empty_tuple, ord("t"): _tuple, 0x85: _tuple1,
    0x86: _tuple2, 0x87: _tuple3, ord("]"): _empty_list, ord("l"): _list, ord("}"): _empty_dict,
    ord("d"): _dict, 0x8F: _empty_set, 0x91: _frozenset, ord("a"): _append_op, ord("e"): _appends,
    0x90: _additems, ord("s"): _setitem, ord("u"): _setitems, ord("g"): _get, ord("h"): _binget,
    ord("j"): _long_binget, ord("p"): _put, ord("q"): _binput, ord("r"): _long_binput, 0x94: _memoize,
    ord("c"): _global, 0x93: _stack_global, ord("R"): _reduce, 0x81: _newobj, 0x92: _newobj_ex,
    ord("b"): _build_op, ord("Q"): _binpersid, ord("P"): _persid,
}
