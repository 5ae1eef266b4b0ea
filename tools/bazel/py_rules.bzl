"""The rules every package's BUILD uses; the data they read is generated into modules.bzl."""

load("//tools/bazel:modules.bzl", "MODULES", "TEST_DEPS")

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
