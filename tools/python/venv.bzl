"""A repository rule that points Bazel's Python toolchain at the project's .venv interpreter.

`tools/setup.sh` creates `.venv/` at the workspace root with the pinned packages. This rule
resolves its absolute path at fetch time (nothing is downloaded), so every `py_binary` and
`py_test` runs that interpreter rather than whatever `python3` is first on PATH, through
`tools/python/python3`, which turns TensorFlow's oneDNN CPU kernels on unless the caller
set TF_ENABLE_ONEDNN_OPTS.
"""

def _venv_python_impl(ctx):
    workspace_root = ctx.path(Label("@//:WORKSPACE")).dirname
    venv_python = workspace_root.get_child(".venv").get_child("bin").get_child("python3")
    if not venv_python.exists:
        fail("No Python environment at %s: run `bash tools/setup.sh` first." % venv_python)

    # tools/python/python3 execs the .venv interpreter with oneDNN's CPU kernels on.
    interpreter = workspace_root.get_child("tools").get_child("python").get_child("python3")
    ctx.file("BUILD", """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{interpreter}",
    python_version = "PY3",
    stub_shebang = "#!/usr/bin/env python3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""".format(interpreter = interpreter))

venv_python = repository_rule(
    implementation = _venv_python_impl,
    local = True,
)
