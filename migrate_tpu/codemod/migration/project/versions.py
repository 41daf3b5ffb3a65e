"""Whether a name of the tree may read the TensorFlow version, told without LibCST: from
a module's text, its import statements and its outline (``outline.py``). Only where it may
is the module's version table made (``lookup.ProjectLookup.version_values``).
"""

from __future__ import annotations

import ast
import os
import re
from functools import partial
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

from migrate_tpu.codemod.foundation.outline import IMPORT_START, Import, Outline
from migrate_tpu.codemod.foundation.receivers import imported_receivers
from migrate_tpu.codemod.migration.project.reading import ModuleResolver, TreeFiles, TreeReader


# How a module names the TensorFlow version (``version_guards._VERSION_NAMES``: ``tf.__version__``,
# ``tf.version.VERSION``, ``tf.VERSION`` in any spelling or import).
_VERSION_WORD = re.compile(r"VERSION(?<=\bVERSION)\b")


class VersionReach(TreeReader):
    """``_may_offer_version``: whether a module's top-level name may read the version, the
    questions followed from module to module and kept for the run (``_reaches``)."""

    def __init__(self, resolve_module: ModuleResolver, read_text: Callable[[str], str], tree_files: Optional[TreeFiles] = None) -> None:
        super().__init__(resolve_module, read_text, tree_files)
        # Whether names may read the version (``_reaches``): the answers kept, the questions
        # being answered (key -> depth), the "no"s that relied on an open one (key -> the
        # lowest such depth), and per question under way the lowest depth it relied on.
        self._reached: Dict[object, bool] = {}
        self._reaching: Dict[object, int] = {}
        self._reach_provisional: Dict[object, int] = {}
        self._reach_low: List[int] = []
        self._imports: Dict[str, Tuple[bool, Tuple[str, ...]]] = {}

    def _may_offer_version(self, path: str, name: str) -> bool:
        """Whether the module's top-level ``name`` may read the TensorFlow version, as its
        outline tells (``outline.py``), without parsing anything with LibCST: a statement
        binding it spells a word that may (``_words_may_read``), or an import binding it
        imports a name that may. False means the module's version table has no ``name``.

        Asked name by name, where the module's whole table was asked for before: on
        transformers 3.0.2, ``file_utils.cached_path`` reads the version (a user-agent
        string), and every module importing it had its table made, with a LibCST parse,
        to learn that none of the names asked about reads it."""
        return self._reaches(("offers", path, name), lambda: self._offers(path, name))

    def _offers(self, path: str, name: str) -> bool:
        direct, imported = self._version_facts(path)
        if not direct and not imported:
            return False  # it reads no version and imports nothing of the tree that may
        outline = self._outline(path)
        if outline is None:
            return False  # as its table: a module not parsed offers nothing
        if outline.star_import:
            return True
        if any(self._import_may_offer(path, target) for target in outline.imports.get(name, ())):
            return True
        return any(
            self._words_may_read(path, outline, outline.words(index), direct)
            for index in outline.bound.get(name, ())
            if not outline.statements[index].is_class  # a class is no value the table holds
        )

    def _words_may_read(self, path: str, outline: Outline, words: FrozenSet[str], direct: bool) -> bool:
        """Whether one of a statement's ``words`` may read the version: ``__version__`` or
        ``VERSION`` where the module reads TensorFlow's (``direct``), a name of the module that
        may (``_may_offer_version``), or a class of it whose body may (``Klass.X``)."""
        for word in sorted(words):  # in one order, run after run: the same questions asked, at the same cost
            if word == "__version__" or word == "VERSION":
                if direct:
                    return True
                continue
            if (word in outline.imports or word in outline.bound) and self._may_offer_version(path, word):
                return True
            classes = [index for index in outline.bound.get(word, ()) if outline.statements[index].is_class]
            if classes and self._reaches(("class", path, word), partial(self._statements_may_read, path, outline, classes, direct)):
                return True
        return False

    def _statements_may_read(self, path: str, outline: Outline, statements: List[int], direct: bool) -> bool:
        return any(self._words_may_read(path, outline, outline.words(index), direct) for index in statements)

    def _import_may_offer(self, path: str, target: Import) -> bool:
        """Whether what ``target`` imports into the module may read the version: a module of
        the tree that may (``import pkg.compat as compat``), a name of one that may, or a name
        spelled ``__version__``/``VERSION``. TensorFlow's own names are read by the words that
        spell them (``tf.__version__``), and other packages offer none."""
        if target.name is None:
            resolved = self._resolve(target.module, path)
            if resolved is None:
                return False
            # A package is read as ``pkg.mod.X``, from any module of it: it may.
            return os.path.basename(resolved) == "__init__.py" or self._module_may_offer(resolved)
        if target.name in ("__version__", "VERSION"):
            return True
        joined = f"{target.module}.{target.name}" if target.module.strip(".") else f"{target.module}{target.name}"
        submodule = self._resolve(joined, path)
        if submodule is not None:
            return self._module_may_offer(submodule)
        base = self._resolve(target.module, path)
        return base is not None and self._may_offer_version(base, target.name)

    def _module_may_offer(self, path: str) -> bool:
        """Whether a module imported whole may offer a name that reads the version."""

        def offers() -> bool:
            outline = self._outline(path)
            if outline is None:
                return False
            names = set(outline.bound) | set(outline.imports)
            return outline.star_import or any(self._may_offer_version(path, name) for name in sorted(names))

        return self._reaches(("module", path), offers)

    def _reaches(self, key: Tuple[str, str, str] | Tuple[str, str], compute: Callable[[], bool]) -> bool:
        """``compute()`` for ``key``, kept for the run: whether a name may read the version.

        The questions follow names from module to module, and an import cycle (or a name read
        in its own definition) asks a question while it is being answered: that one counts as
        "no" for now, as a cycle reads nothing by itself. A "no" that relied on a question
        still open is not kept until that question is answered (a "no" then settles it; a
        "yes" leaves it to be asked again): the answers do not depend on the order of the
        questions. ``_reach_low`` holds, per question under way, the lowest depth of an open
        question it relied on."""
        known = self._reached.get(key)
        if known is not None:
            self._used(("reaches", key))
            return known
        pending = self._reaching.get(key, self._reach_provisional.get(key))
        if pending is not None:
            if key not in self._reaching:
                self._used(("reaches", key))  # what that "no" read counts for this file too
            if self._reach_low:
                self._reach_low[-1] = min(self._reach_low[-1], pending)
            return False
        depth = len(self._reach_low)
        self._reaching[key] = depth
        self._reach_low.append(depth)
        try:
            with self._computing(("reaches", key)):
                result = compute()
        finally:
            low = self._reach_low.pop()
            del self._reaching[key]
        if self._reach_low:
            self._reach_low[-1] = min(self._reach_low[-1], low)
        if result or low >= depth:
            self._reached[key] = result
        # The "no"s that relied on this question: settled with it ("no"), asked again
        # ("yes"), or, where it is itself open, relying on what it relies on.
        for other in [k for k, relied in self._reach_provisional.items() if relied >= depth]:
            if result:
                del self._reach_provisional[other]
            elif low >= depth:
                del self._reach_provisional[other]
                self._reached[other] = False
                # It rested on this question: what this one read counts for it too (the
                # engine's cache checks those files before reusing a result that used it).
                self._depends[("reaches", other)] = self._depends.get(("reaches", other), frozenset()) | self._depends[("reaches", key)]
            else:
                self._reach_provisional[other] = low
        if not result and low < depth:
            self._reach_provisional[key] = low
        return result

    def _version_facts(self, path: str) -> Tuple[bool, Tuple[str, ...]]:
        """(names the version or imports a tree package whole, the tree modules it imports from)."""
        known = self._imports.get(path)
        if known is not None:
            self._used(("imports", path))
            return known
        with self._computing(("imports", path)):
            facts = self._read_version_facts(path)
        self._imports[path] = facts
        return facts

    def _read_version_facts(self, path: str) -> Tuple[bool, Tuple[str, ...]]:
        facts: Tuple[bool, Tuple[str, ...]] = (False, ())
        try:
            text = self._read_text(path)
        except Exception:  # not read: its summary is not made either
            text = ""
        if not text:
            return facts
        statements = _import_statements(text)
        if _may_read_tensorflow_version(text, statements):
            return (True, ())
        return self._imported_tree_modules(statements, path)

    def _imported_tree_modules(self, statements: List[ast.stmt], path: str) -> Tuple[bool, Tuple[str, ...]]:
        found: List[str] = []
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.partition(".")[0]
                    if self._resolve(top, path) is not None or self._resolve(alias.name, path) is not None:
                        return True, ()
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                candidates = [base] + [f"{base}.{a.name}" if node.module else f"{base}{a.name}" for a in node.names if a.name != "*"]
                for module in candidates:
                    resolved = self._resolve(module, path) if module.strip(".") or module else None
                    if resolved is not None:
                        found.append(resolved)
        return False, tuple(found)


def _may_read_tensorflow_version(text: str, statements: List[ast.stmt]) -> bool:
    """Whether the module's text may read TensorFlow's version itself (what
    ``version_guards._VERSION_NAMES`` names): ``__version__`` or ``VERSION`` as an attribute of
    anything but a name that only imports of other packages bind (``torch.__version__``,
    ``transformers.__version__``: ``receivers.imported_receivers``), or imported from
    TensorFlow. A module's own ``__version__ = "3.0.2"`` reads nothing, and one imported from
    another module of the tree is that module's to offer (``_may_offer_version``). Before,
    any ``__version__`` counted: on transformers 3.0.2, which names its own and PyTorch's
    everywhere, the version tables of a dozen modules (a LibCST parse each) were made for
    one file, 2.7 s."""
    for word in ("__version__", "VERSION"):
        # (``in`` first: a pattern that begins with ``\b`` is tried at every position.)
        if word not in text or (word == "VERSION" and _VERSION_WORD.search(text) is None):
            continue
        if ("." + word) not in text and _ATTRIBUTE_OF[word].search(text) is None:
            continue  # no attribute access of it: only the module's own name, or an import
        receivers = imported_receivers(text, word)
        if receivers is None or any(target.startswith("tensorflow") for targets in receivers.values() for target in targets):
            return True
    for node in statements:
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("tensorflow"):
            if any(alias.name in ("__version__", "VERSION", "version", "*") for alias in node.names):
                return True
    return False


# An attribute access of each name, however spaced (``tf . __version__``).
_ATTRIBUTE_OF = {word: re.compile(rf"\.(?:\s|\\\n)*{word}\b") for word in ("__version__", "VERSION")}


def _import_statements(text: str) -> List[ast.stmt]:
    """The import statements of a module, without parsing all of it: each place an import
    may begin (``outline.IMPORT_START``) is read to the end of its logical line (brackets and
    backslashes continue it) and that alone is parsed. Text in a string or comment that reads
    as an import is taken too (one more module to look at, never one less); what does not
    parse is skipped. On tf-models-official 2.2.2, 57 modules: 0.26 s with a full ``ast``
    parse and walk each, 0.02 s so."""
    found: List[ast.stmt] = []
    for match in IMPORT_START.finditer(text):
        start = match.end()
        end = _logical_line_end(text, start)
        try:
            module = ast.parse(text[start:end])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        found.extend(node for node in module.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    return found


def _logical_line_end(text: str, start: int) -> int:
    """Where the logical line from ``start`` ends: at a newline outside brackets and not
    after a backslash, or at ``;`` outside brackets (an import holds no strings)."""
    depth = 0
    index = start
    length = len(text)
    while index < length:
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "\\" and text.startswith("\n", index + 1):
            index += 2
            continue
        elif char == "#" and depth <= 0:
            newline = text.find("\n", index)
            return length if newline < 0 else newline
        elif (char == "\n" and depth <= 0) or (char == ";" and depth <= 0):
            return index
        index += 1
    return length
