"""The speed stages: what spares a file LibCST's parse, which is most of a migration's cost.
In order: the textual prefilter (``prefilter``, with the table the rules' evidence makes,
``evidence_table``) runs in the engine's main process on the bytes and skips a file that
holds no rule's evidence (no decoding, no worker); the syntax stage (``syntax_stage``, over
``source_index`` and its ``bound_names``) parses with the standard library's ``ast``, about
ten times cheaper, and skips a file where no rule ``may_fire``; the partial parse
(``partial_parse``) hands LibCST only the top-level statements a rule may need. Each answer
is conservative: the findings are the same with the stages or without them. The stages know
rules only as the classes handed to them (their ``evidence``, ``ruled_out_by_text``,
``may_fire``). They may import the foundation and the analysis, never the layers above;
``prefilter`` and ``evidence_table`` import neither LibCST nor any rule.
"""
