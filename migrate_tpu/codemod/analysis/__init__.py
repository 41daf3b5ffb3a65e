"""Scope analysis: one walk of a module (``walk.Analysis``: scopes, bindings, the rules'
``visit_<Node>`` hooks), what a name is bound to and stands for (``names``), which code runs
traced (``tracing``), which objects are strategies or optimizers (``strategies``,
``optimizers``) and what a body does besides computing (``side_effects``). Of rules it
knows only the duck-typed hooks it calls. It may import the foundation, never the layers
above (stages, framework, rules, migration).
"""
