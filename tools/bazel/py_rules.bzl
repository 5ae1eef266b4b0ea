"""The rules every package's BUILD uses; the data they read is generated into modules.bzl."""

load("//tools/bazel:modules.bzl", "MODULES", "TEST_DEPS")

# Every program of the documented packages (each <name>_main.py, tools/build_files.py):
# docs/flags.md documents each one (//docs:flags_doc); the emulated and peer tasks are the
# ones the benchmarks start themselves (`python -m benchmarks.<task>_main`).
PROGRAMS = [
    "//benchmarks:cluster_emulator",
    "//benchmarks:cluster_peer_task",
    "//benchmarks:cluster_peers",
    "//benchmarks:cluster_traffic",
    "//benchmarks:emulated_peer_task",
    "//benchmarks:emulated_task",
    "//benchmarks:flow_benchmark",
    "//benchmarks:i3d_memory",
    "//benchmarks:input_benchmark",
    "//benchmarks:scaling_model",
    "//benchmarks:time_to_accuracy",
    "//benchmarks:towers_benchmark",
    "//data_tools:extract_flow",
    "//data_tools:make_synthetic_ucf101",
    "//data_tools:prepare",
    "//towers:classify",
    "//towers:evaluate_two_stream",
    "//towers:train",
    "//towers/cluster:local_cluster",
]

def py_modules(data = {}):
    """One py_library per module of this package, named as tools/build_files.py names it.

    data: py_library name -> its data files. The programs' py_binary targets are in the
    generated section at the end of the package's BUILD.
    """
    package = native.package_name()
    native.filegroup(
        name = "py_files",  # every module, listed or not: for the specs that read the sources
        srcs = native.glob(["*.py"]),
        visibility = ["//visibility:public"],
    )
    for filename, name, deps in MODULES.get(package, []):
        native.py_library(
            name = name,
            srcs = [filename],
            deps = deps,
            data = data.get(name, []),
            visibility = ["//visibility:public"],
        )

def py_tests(tests):
    """One py_test per entry of `tests` (name -> size, tags, data...), deps from TEST_DEPS
    plus `extra_deps` for modules a spec runs without importing them."""
    for name, attrs in tests.items():
        attrs = dict(attrs)
        extra = attrs.pop("extra_deps", [])
        deps = TEST_DEPS[name] + [d for d in extra if d not in TEST_DEPS[name]]
        native.py_test(name = name, srcs = [name + ".py"], deps = deps, **attrs)
