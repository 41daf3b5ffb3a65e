"""Processes: running a script or notebook under the emulation (``runner``; a notebook's cells:
``notebooks``), starting it in the chosen interpreter (``launch``, ``launch_apart`` for a run in a
process of its own), warm interpreters forked per run (``warm``, the pool of servers
``warm_pool``, ``warm_server``), the worker processes of a multi-worker program (``pod``), the
TensorFlow interpreters (``envs``, ``tf-envs.sh``) and TensorFlow's start-up noise (``noise``).

May import: every other folder of the runtime, the package's constants and this folder; what
the CLI and verify start a run through (``launch``, ``launch_apart``) imports no TensorFlow.
"""
