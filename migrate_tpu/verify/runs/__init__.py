"""verify's runs: the two copies in temporary folders (``plan``), one run through the runtime's
launcher with the recorder on (``running``), two runs at once where there is room
(``side_by_side``), and whether a program reads its cluster itself (``cluster``).

May import: ``values/``, this folder, the migrated copy's wiring and the settings (``plan``), and
of the runtime only its launcher, the recorder's names and the TPU machine's words.
"""
