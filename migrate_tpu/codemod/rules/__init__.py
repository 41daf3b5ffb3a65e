"""Structural rules, one module each; each module registers its rule."""
