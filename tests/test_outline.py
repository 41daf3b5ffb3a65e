"""A module's outline (``codemod/outline.py``): what each top-level statement binds and the
words it holds, a superset of what the LibCST analysis reads, so that a "no" from it holds."""

from migrate_tpu.codemod.foundation.outline import Import, outline_of


def _words_of(source: str, name: str):
    outline = outline_of(source)
    assert outline is not None
    return [sorted(outline.words(index)) for index in outline.bound[name]]


def test_a_compound_statement_is_taken_apart():
    source = (
        "try:\n"
        "    import tensorflow as tf\n"
        "    assert tf.__version__ >= '2'\n"
        "    AVAILABLE = True\n"
        "except ImportError as error:\n"
        "    AVAILABLE = False\n"
        "for PART in tf.__version__.split('.'):\n"
        "    LAST = 1\n"
    )
    assert _words_of(source, "AVAILABLE") == [["AVAILABLE", "True"], ["AVAILABLE", "False"]]
    assert "__version__" in _words_of(source, "PART")[0]  # a loop's target holds what its header reads
    assert _words_of(source, "LAST") == [["1", "LAST"]]
    assert outline_of(source).imports["tf"] == [Import("tensorflow", None)]


def test_a_docstring_is_left_out_only_where_its_lines_hold_nothing_else():
    alone = "def f():\n    '''Reads tf.__version__ in prose.'''\n    return 1\n"
    assert _words_of(alone, "f") == [["1", "def", "f", "return"]]
    for shared in (
        "def f(v=tf.__version__): 'doc'\n",
        "def f(a,\n      v=tf.__version__): 'doc'\n",
        "def f():\n    'doc'; x = tf.__version__\n",
    ):
        assert "__version__" in _words_of(shared, "f")[0], shared


def test_a_class_offers_the_words_of_its_assignments():
    source = "class K:\n    '''tf.__version__ in prose.'''\n    SIZE = 3\n    def version(self):\n        return tf.__version__\n"
    assert _words_of(source, "K") == [["3", "SIZE"]]


def test_imports_anywhere_bind_what_they_import():
    source = (
        "import a.b\n"
        "import c.d as e\n"
        "from .flags import IS_OLD as old\n"
        "def f():\n"
        "    from ..compat import V2\n"
        "    return V2\n"
        "x = 'import nothing'\n"
    )
    outline = outline_of(source)
    assert outline.imports == {
        "a": [Import("a", None)],  # the package: any module of it may be read through ``a``
        "e": [Import("c.d", None)],
        "old": [Import(".flags", "IS_OLD")],
        "V2": [Import("..compat", "V2")],
    }
    assert not outline.star_import
    assert outline_of("from m import *\n").star_import


def test_a_global_in_a_def_binds_the_module_name_with_the_whole_def():
    source = "def setup():\n    global RELEASE\n    RELEASE = tf.__version__\n\nglobal_step = 1\n"
    assert "__version__" in _words_of(source, "RELEASE")[0]
    assert _words_of(source, "global_step") == [["1", "global_step"]]


def test_what_the_parser_refuses_has_no_outline():
    assert outline_of("def f(:\n") is None
