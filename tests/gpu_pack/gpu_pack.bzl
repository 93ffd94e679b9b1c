"""gpu_pack: one archive with GPU test binaries and their runner, for GPU nodes without Bazel.

Build it with --config=gpu (dynamic_mode=off) so every binary links the workspace's libraries
statically; the packing script refuses a binary that still needs a shared object it cannot find
next to itself (a workspace .so left in Bazel's runfiles tree).
"""

_RUNNER = "//tests/gpu_pack:run_gpu_tests.sh"
_PACKER = "//tests/gpu_pack:make_gpu_pack.sh"

def gpu_pack(name, tests, tools = [], **kwargs):
    """Packs `tests` (run and counted by run_gpu_tests.sh) and `tools` (shipped, not run).

    Writes <name>.tar.gz holding gpu_pack/run_gpu_tests.sh, gpu_pack/tests/<binary>,
    gpu_pack/tools/<binary> and gpu_pack/MANIFEST. Tagged manual: `bazel test //...` does not
    build it; `bazel build --config=gpu //<package>:<name>` does.

    Args:
      name: target name; the archive is <name>.tar.gz.
      tests: labels of GoogleTest binaries (cc_test) the runner executes.
      tools: labels of other binaries (benchmarks, examples) shipped under tools/.
      **kwargs: passed to the genrule (visibility, ...).
    """
    args = ["--out $@", "--runner $(location %s)" % _RUNNER]
    args += ["--test $(location %s)" % t for t in tests]
    args += ["--tool $(location %s)" % t for t in tools]
    native.genrule(
        name = name,
        srcs = tests + tools + [_RUNNER],
        outs = [name + ".tar.gz"],
        cmd = "$(location %s) %s" % (_PACKER, " ".join(args)),
        tools = [_PACKER],
        tags = ["manual"] + kwargs.pop("tags", []),
        # Test binaries are testonly; so is a pack of them.
        testonly = True,
        message = "Packing GPU tests into %s.tar.gz" % name,
        **kwargs
    )
