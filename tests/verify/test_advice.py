"""The advice of an ``error`` verdict (no TensorFlow): a module that a notebook's skipped
shell command fetches or installs is named as such, not as a package the interpreter lacks."""

import json

from migrate_tpu.verify.judge.advice import failure_advice


def notebook(tmp_path, *cells):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source} for source in cells]}))
    return path


def missing(module):
    return {"exception": {"type": "ModuleNotFoundError", "message": f"No module named '{module}'"}}


def test_a_module_a_skipped_shell_command_fetches_is_named_with_that_command(tmp_path):
    nb = notebook(tmp_path, ["!pip install wandb -q\n", "import wandb\n"],
                  "!wget https://raw.githubusercontent.com/x/y/master/zoo/resnet/resnet_cifar10.py",
                  ["%%bash\n", "git clone https://github.com/x/helpers_lib.git\n"],
                  "import resnet_cifar10\nimport helpers_lib\n")
    fetched = failure_advice(missing("resnet_cifar10"), "nb.ipynb", program=nb)
    assert "fetches 'resnet_cifar10'" in fetched and "!wget https://" in fetched and "beside the notebook" in fetched
    assert "fetches 'helpers_lib'" in failure_advice(missing("helpers_lib"), "nb.ipynb", program=nb)  # a %%bash cell's line
    installed = failure_advice(missing("wandb"), "nb.ipynb", program=nb)
    assert "installs 'wandb'" in installed and "!pip install wandb -q" in installed and "--python" in installed


def test_a_module_no_shell_command_names_is_a_package_the_interpreter_lacks(tmp_path):
    nb = notebook(tmp_path, "!wget https://example.com/resnet_cifar10_extra.py\n", "import resnet_cifar10\n")
    assert "lacks the package 'resnet_cifar10'" in failure_advice(missing("resnet_cifar10"), "nb.ipynb", program=nb)
    script = tmp_path / "train.py"
    script.write_text("# !wget https://example.com/tqdm.py\nimport tqdm\n")
    assert "lacks the package 'tqdm'" in failure_advice(missing("tqdm"), "train.py", program=script)
    assert "lacks the package 'tqdm'" in failure_advice(missing("tqdm"), "train.py")



def test_an_original_a_tpu_node_refused_is_said_so():
    """The worker of a TPU Node (the machine emulated by default) refused a local path or Python input:
    the original would not have run there, and nothing can be compared (runtime/tpu/tpu_machine.py)."""
    for kind, message in (("UnimplementedError", "File system scheme '[local]' not implemented (file: 'train') [Op:CreateSummaryFileWriter]"),
                          ("NotFoundError", "No registered 'PyFunc' OpKernel for 'CPU' devices compatible with node {{node PyFunc}}"),
                          ("UnavailableError", "failed to connect to all addresses\nAdditional GRPC error information")):
        advice = failure_advice({"exception": {"type": kind, "message": message}}, "train.py")
        assert advice.startswith("a TPU Node of that release refused it too"), advice
        assert "--tpu-env vm" in advice
    other = failure_advice({"exception": {"type": "UnimplementedError", "message": "File system scheme 'hdfs' not implemented"}}, "train.py")
    assert "TPU Node" not in other
