"""Structural rules, one module each (a large one a package of parts, as ``eager_run/``);
each registers its rule when imported, and ``catalogue.load`` imports every one of them."""
