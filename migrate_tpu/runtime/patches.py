"""The runtime's one ledger of patches: every change it makes to objects it does not own
(TensorFlow's modules, classes and tables, Keras's, the module types Python shows) is made through
here, in order, under the name of the part that made it, and undone through here, newest first.

``patch(by, owner, name, value)`` sets an attribute (a class's own, never one it inherits, is
noted as it was), ``patch_item`` a key of a dict, and ``note`` a change made another way with the
function that undoes it.  ``undo(by)`` puts back what ``by`` changed, newest first; ``entries()``
lists what is patched now (a test lists what a run patched, and that nothing is left after it).

A plain module beside the runtime's folders, below them all (``tests/test_walls.py``); the
standard library only, Python 3.7 syntax.
"""

from __future__ import absolute_import, division, print_function

from typing import Any, Callable, List, NamedTuple, Optional, Tuple

#: What a patch notes as the value before it where the attribute (or key) was not there.
MISSING = object()


class Entry(NamedTuple):
    by: str  # the part that made the change ("emulation", "legacy", "moved_calls", ...)
    owner: Any  # the module, class or dict changed
    name: Any  # the attribute's name, or the dict's key
    before: Any  # the value before, or MISSING
    put_back: Callable[[], None]  # puts the value before back


_LEDGER: List[Entry] = []


def _own_value(owner, name):
    """What ``owner`` holds under ``name`` itself: a class's own attribute (never one it
    inherits, which putting back would copy onto it), any other object's attribute."""
    if isinstance(owner, type):
        return owner.__dict__.get(name, MISSING)
    return getattr(owner, name, MISSING)


def _restore_attribute(owner, name, before):
    if before is MISSING:
        try:
            delattr(owner, name)
        except AttributeError:
            pass
    else:
        setattr(owner, name, before)


def patch(by: str, owner: Any, name: str, value: Any, put_back: Optional[Callable[[], None]] = None) -> Any:
    """``owner.name = value``, noted in the ledger under ``by``; returns the value before (or
    MISSING).  ``put_back``: how to put it back where deleting or setting the value before is not
    the way (a ``__new__`` a class inherited)."""
    before = _own_value(owner, name)
    _LEDGER.append(Entry(by, owner, name, before, put_back or (lambda: _restore_attribute(owner, name, before))))
    setattr(owner, name, value)
    return before


def patch_item(by: str, mapping: Any, key: Any, value: Any) -> Any:
    """``mapping[key] = value``, noted in the ledger under ``by``; returns the value before."""
    before = mapping.get(key, MISSING)

    def put_back() -> None:
        if before is MISSING:
            mapping.pop(key, None)
        else:
            mapping[key] = before
    _LEDGER.append(Entry(by, mapping, key, before, put_back))
    mapping[key] = value
    return before


def note(by: str, owner: Any, name: Any, before: Any, put_back: Callable[[], None]) -> None:
    """A change ``by`` made another way (a module's ``__class__``), with what puts it back."""
    _LEDGER.append(Entry(by, owner, name, before, put_back))


def undo(*parts: str) -> int:
    """Put back every change the ``parts`` made, newest first across them all (parts that
    wrap each other's patches of one name are undone together, or an older part would put
    its value back under a newer one's); returns how many."""
    theirs = [entry for entry in _LEDGER if entry.by in parts]
    _LEDGER[:] = [entry for entry in _LEDGER if entry.by not in parts]
    for entry in reversed(theirs):
        entry.put_back()
    return len(theirs)


def _shown(owner: Any) -> str:
    """A class as ``module.Class``, a module by its name, a dict as "a table"."""
    if isinstance(owner, dict):
        return "a table"
    if isinstance(owner, type):
        return "{}.{}".format(owner.__module__, owner.__qualname__)
    return str(getattr(owner, "__name__", None) or type(owner).__name__)


def patched_by(by: str) -> bool:
    """Whether ``by`` has changes in the ledger now (what makes an install idempotent)."""
    return any(entry.by == by for entry in _LEDGER)


def entries(by: Optional[str] = None) -> List[Tuple[str, str, str]]:
    """``(by, owner, name)`` of every change in the ledger now (of ``by``'s, if given), oldest first."""
    return [(entry.by, _shown(entry.owner), str(entry.name)) for entry in _LEDGER if by is None or entry.by == by]
