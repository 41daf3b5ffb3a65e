"""A notebook's JSON text, read and written in place: where each cell's ``source`` value is
in the file's text (``Cell``), the checks that the file is a notebook at all, the splice of
new sources into the text, and the check that the splice changed nothing else.

Apart from ``notebook.py``, which migrates the cells' code, because this knows nothing of
code: the file is never re-serialised, so every byte outside a changed ``source`` value
(outputs, ids, metadata, indentation, key order, the final newline) stays as it was, and
that takes a reader of JSON that keeps offsets, which is all this module is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # public in json.decoder (json.scanner uses it); typeshed leaves it out
from typing import Any, Dict, Generator, Iterator, List, Tuple

from migrate_tpu.engine.file_error import FileError

_WHITESPACE = " \t\n\r"


@dataclass
class Cell:
    number: int  # 1-based, all cells counted
    kind: str
    source: str
    span: Tuple[int, int]  # of the `source` value in the file's text
    raw: object  # the decoded `source` value (str or list)


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _expect(text: str, index: int, char: str) -> int:
    index = _skip(text, index)
    if index >= len(text) or text[index] != char:
        raise ValueError(f"expected {char!r} at offset {index}")
    return index + 1


_DECODER = json.JSONDecoder()


def _members(text: str, index: int) -> Generator[Tuple[str, int, int], None, int]:
    """Yield ``(key, value_start, value_end)`` of the object at ``index``; the
    generator's return value is the offset after the closing brace."""
    index = _expect(text, index, "{")
    index = _skip(text, index)
    if text.startswith("}", index):
        return index + 1
    while True:
        index = _expect(text, index, '"')
        key, index = scanstring(text, index)
        index = _expect(text, index, ":")
        start = _skip(text, index)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        index = _skip(text, end)
        if text.startswith(",", index):
            index += 1
            continue
        index = _expect(text, index, "}")
        return index


def _elements(text: str, index: int) -> Iterator[Tuple[int, int]]:
    """Yield ``(start, end)`` of each element of the array at ``index``."""
    index = _expect(text, index, "[")
    index = _skip(text, index)
    if text.startswith("]", index):
        return
    while True:
        start = _skip(text, index)
        _, end = _DECODER.raw_decode(text, start)
        yield start, end
        index = _skip(text, end)
        if text.startswith(",", index):
            index += 1
            continue
        _expect(text, index, "]")
        return


def _read_cells(text: str) -> List[Cell]:
    cells: List[Cell] = []
    for key, start, _ in _members(text, _skip(text, 0)):
        if key != "cells":
            continue
        for number, (cell_start, _) in enumerate(_elements(text, start), start=1):
            kind = None
            span = None
            raw: object = None
            for cell_key, value_start, value_end in _members(text, cell_start):
                if cell_key == "cell_type":
                    kind = json.loads(text[value_start:value_end])
                elif cell_key == "source":
                    span = (value_start, value_end)
                    raw = json.loads(text[value_start:value_end])
            if span is None or not isinstance(kind, str):
                raise FileError(f"not a valid notebook: cell {number} has no source or cell_type", cell=number)
            if isinstance(raw, list) and all(isinstance(part, str) for part in raw):
                source = "".join(raw)
            elif isinstance(raw, str):
                source = raw
            else:
                raise FileError("not a valid notebook: a cell's source is neither text nor a list of lines", cell=number)
            cells.append(Cell(number, kind, source, span, raw))
    return cells


def check_notebook_text(data: bytes) -> Tuple[str, Dict[str, Any]]:
    """The notebook's text and JSON document; :class:`FileError` when it is not UTF-8 JSON holding an object.

    The cheap check made even on notebooks the prefilter rules out, so that
    a broken notebook is named whether or not it mentions TensorFlow.
    """
    try:
        text = data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError as error:
        raise FileError(f"not a notebook: not UTF-8 (byte 0x{data[error.start]:02x})", line=data[: error.start].count(b"\n") + 1)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise FileError(f"not a notebook: invalid JSON: {error.msg} (column {error.colno})", line=error.lineno)
    if not isinstance(document, dict):
        raise FileError("not a notebook: the JSON is not an object")
    return text, document


def load_notebook(data: bytes) -> Tuple[str, Dict[str, Any], List[Cell]]:
    text, document = check_notebook_text(data)
    major = document.get("nbformat")
    if major != 4:
        raise FileError(
            f"unsupported notebook format {major!r}: only nbformat 4 is supported; "
            "convert with `jupyter nbconvert --to notebook --nbformat 4`"
        )
    _validate(document)
    try:
        cells = _read_cells(text)
    except ValueError as error:  # pragma: no cover - json.loads accepted the text
        raise FileError(f"not a notebook: {error}")
    return text, document, cells


def _validate(document: Dict[str, Any]) -> None:
    """nbformat's own schema check; the document itself is never changed."""
    import copy
    import warnings

    import nbformat
    from nbformat import ValidationError

    copied = copy.deepcopy(document)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.from_dict(copied)
            nbformat.validate(notebook, version=4)
    except ValidationError as error:
        where = "/".join(str(part) for part in getattr(error, "absolute_path", ()) or ())
        cell = None
        path = list(getattr(error, "absolute_path", ()) or ())
        if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
            cell = path[1] + 1
        message = str(getattr(error, "message", error)).splitlines()[0]
        if cell is not None:
            where = "/".join(str(part) for part in path[2:])
        raise FileError(f"not a valid notebook (nbformat 4): {message}" + (f" (at {where})" if where else ""), cell=cell)


def notebook_language(document: Dict[str, Any]) -> str:
    metadata = document.get("metadata") or {}
    for holder, key in (("kernelspec", "language"), ("language_info", "name")):
        value = (metadata.get(holder) or {}).get(key)
        if isinstance(value, str) and value:
            return value.lower()
    return "python"


# -- writing ------------------------------------------------------------------------


def _split_lines(source: str) -> List[str]:
    return source.splitlines(keepends=True)


def _format_source(new: str, raw: object, original: str, ensure_ascii: bool) -> str:
    """``new`` as a JSON value laid out like ``original`` (the value's old text)."""
    if isinstance(raw, str):
        return json.dumps(new, ensure_ascii=ensure_ascii)
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in _split_lines(new)]
    spans = list(_elements(original, 0))
    if not items:
        return "[]"
    if not spans:
        return "[" + ", ".join(items) + "]"
    lead = original[1 : spans[0][0]]
    trail = original[spans[-1][1] : len(original) - 1]
    if len(spans) > 1:
        separator = original[spans[0][1] : spans[1][0]]
    else:
        separator = "," + lead if lead else ", "
    return "[" + lead + separator.join(items) + trail + "]"


def uses_ascii_escapes(text: str) -> bool:
    """Whether the file writes non-ASCII text as ``\\uXXXX`` (``ensure_ascii``)."""
    if not text.isascii():
        return False
    return re.search(r"\\u(?!00[0-7][0-9a-fA-F])[0-9a-fA-F]{4}", text) is not None


def splice(text: str, cells: List[Cell], new_sources: Dict[int, str]) -> str:
    ensure_ascii = uses_ascii_escapes(text)
    pieces = []
    position = 0
    for cell in cells:
        if cell.number not in new_sources:
            continue
        start, end = cell.span
        pieces.append(text[position:start])
        pieces.append(_format_source(new_sources[cell.number], cell.raw, text[start:end], ensure_ascii))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


# -- places -------------------------------------------------------------------------


def file_position(text: str, cell: Cell, line: int, column: int, ensure_ascii: bool) -> Tuple[int, int]:
    """Where line ``line``, column ``column`` of ``cell``'s source is in the
    notebook file's own text (1-based), for annotations on the raw file."""
    start, _ = cell.span
    items = list(zip(_elements(text, start), cell.raw)) if isinstance(cell.raw, list) else [((start, cell.span[1]), cell.raw)]
    seen = 0  # source lines started before the item
    for index, ((item_start, _), item) in enumerate(items):
        starts = item.count("\n") + (0 if item.endswith("\n") else 1)
        if seen + starts >= line or index == len(items) - 1:
            offset = 0
            for _ in range(max(0, min(line - 1 - seen, item.count("\n")))):
                offset = item.index("\n", offset) + 1
            prefix = item[: offset + max(column - 1, 0)]
            line_start = text.rfind("\n", 0, item_start) + 1
            encoded = json.dumps(prefix, ensure_ascii=ensure_ascii)
            return text.count("\n", 0, item_start) + 1, item_start - line_start + len(encoded)
        seen += item.count("\n")
    return text.count("\n", 0, start) + 1, 1


# -- checking a splice --------------------------------------------------------------


def verify_splice(new_text: str, document: Dict[str, Any], changed: Dict[int, str]) -> None:
    """The spliced text must decode to the original notebook with only those sources changed."""
    try:
        reread = json.loads(new_text)
    except json.JSONDecodeError as error:  # pragma: no cover - a bug in splice
        raise FileError(f"internal error: the rewritten notebook is not valid JSON ({error.msg}); notebook left unchanged")
    expected = json.loads(json.dumps(document))
    for index, cell in enumerate(expected["cells"]):
        if index + 1 in changed:
            source = changed[index + 1]
            cell["source"] = _split_lines(source) if isinstance(cell["source"], list) else source
    if reread != expected:  # pragma: no cover - a bug in splice
        raise FileError("internal error: rewriting the notebook would change more than its code; notebook left unchanged")
