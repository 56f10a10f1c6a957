"""``record_function``: a named user scope that op callbacks and the profiler see (USER_SCOPE)."""
from __future__ import annotations

import functools

from ..core.dispatch import record_function as _rf

_DECL = "profiler::_record_function_enter_new(str name, str? args=None)"


def _type_error(argname, expected, value, position):
    return RuntimeError(
        f"profiler::_record_function_enter_new() Expected a value of type '{expected}' for argument '{argname}' "
        f"but instead found type '{type(value).__name__}'.\nPosition: {position}\nValue: {value!r}\n"
        f"Declaration: {_DECL}")


class record_function:  # noqa: N801 - torch's name
    """Mark a block (``with record_function("name"):``) or a function (``@record_function("name")``).

    Callbacks registered for ``RecordScope.USER_SCOPE`` run around it, and the
    profiler shows it as a row and as a span in the trace. With no callbacks it
    costs one flag check.
    """

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise _type_error("name", "str", name, 0)
        if args is not None and not isinstance(args, str):
            raise _type_error("args", "Optional[str]", args, 1)
        self.name = name
        self.args = args
        self._token = None

    def __enter__(self):
        self._token = _rf.enter_user_scope(self.name, self.args)
        return self

    def __exit__(self, *exc):
        token, self._token = self._token, None
        _rf.exit_user_scope(token)
        return False

    def __call__(self, fn):
        """As a decorator: each call of ``fn`` runs in its own scope (safe for recursion and threads)."""
        name, args = self.name, self.args

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with record_function(name, args):
                return fn(*a, **kw)
        return wrapper
