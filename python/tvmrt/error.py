"""The exceptions the package raises.

The runtime reports an error as ``Kind: message`` (``ValueError: set_input `data`: expected
dtype float32, got float64``). The kind picks the exception class, as in TVM's own Python
(``tvm/_ffi/base.py``, ``tvm/error.py``), so the usual ``except ValueError`` / ``except
IndexError`` catch what the runtime rejected; the message is the text after the kind (the class
names the kind already). Every class here is also a :class:`TVMError`, so ``except
tvmrt.TVMError`` catches all of them. A kind that is not registered gives a plain
:class:`TVMError` with the whole text.

The classes are named after the Python exceptions they extend (``tvmrt.error.ValueError`` is a
``ValueError`` and a ``TVMError``).
"""

from __future__ import annotations

import builtins
from typing import Callable, Dict, Type, TypeVar

__all__ = [
    "TVMError",
    "InternalError",
    "ValueError",
    "TypeError",
    "IndexError",
    "KeyError",
    "AttributeError",
    "NotImplementedError",
    "OSError",
    "register_error",
    "from_message",
]

E = TypeVar("E", bound=Type[BaseException])


class TVMError(RuntimeError):
    """An error reported by the runtime (its message, as ``TVMGetLastError`` gives it), or a
    misuse of this package detected before calling it."""


ERROR_TYPE: Dict[str, Type[BaseException]] = {}
"""Error kind (the text before the first ``:`` of a runtime message) -> exception class."""


def register_error(name: str) -> Callable[[E], E]:
    """Class decorator: messages of kind ``name`` raise the class."""

    def register(cls: E) -> E:
        ERROR_TYPE[name] = cls
        return cls

    return register


register_error("TVMError")(TVMError)
register_error("RuntimeError")(TVMError)


@register_error("InternalError")
class InternalError(TVMError):
    """A failure of the runtime itself (a bug, a panic caught at the C boundary)."""


def _kind(builtin: Type[BaseException], doc: str, **attrs: object) -> Type[TVMError]:
    """A class named after ``builtin`` that is both it and a :class:`TVMError`, registered for
    messages of that kind. (The name shadows the built-in one here, as the class stands for it.)"""
    name = builtin.__name__
    cls = type(name, (TVMError, builtin), {"__doc__": doc, "__module__": __name__, "__qualname__": name, **attrs})
    return register_error(name)(cls)


ValueError = _kind(builtins.ValueError, "A value out of its allowed set: a wrong dtype or shape, an unknown name.")
TypeError = _kind(builtins.TypeError, "An argument of the wrong type.")
IndexError = _kind(builtins.IndexError, "An index out of range.")
# KeyError's own str() would quote the message as a key's repr.
KeyError = _kind(builtins.KeyError, "A key that is not there.", __str__=BaseException.__str__)
AttributeError = _kind(builtins.AttributeError, "A name lookup (a module's function, a field) that failed.")
NotImplementedError = _kind(builtins.NotImplementedError, "Something this runtime does not support.")
OSError = _kind(builtins.OSError, "A file or operating-system error (a model that cannot be read or loaded).")


def from_message(msg: str) -> BaseException:
    """The exception for a runtime message ``Kind: text``: the kind's class with ``text``, or
    :class:`TVMError` with the whole message when the kind is not registered."""
    kind, colon, rest = msg.partition(":")
    cls = ERROR_TYPE.get(kind) if colon else None
    if cls is None:
        return TVMError(msg)
    return cls(rest[1:] if rest.startswith(" ") else rest)
