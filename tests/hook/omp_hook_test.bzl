"""Macros of the OpenMP hook tests (tests/hook): one program built without and with the
hook, and a compare.sh test over both, each under libomptarget 16 and 19.

Under LLVM 16 the targets have the names given; under LLVM 19 the program's name gains
`_llvm19` (maps_basic_llvm19_plain, maps_basic_llvm19_hooked) and the test's `_llvm19` before
its `_test` (maps_basic_llvm19_test)."""

load("//build_defs:omp.bzl", "omp_binary")

# The `present` modifier (update to/from, map) needs OpenMP 5.1; clang 16 defaults to 5.0.
HOOK_TEST_COPTS = ["-fopenmp-version=51"]

LLVM_VERSIONS = [16, 19]

def llvm_program_name(name, llvm):
    """The name of program `name`'s build for LLVM `llvm`."""
    return name if llvm == 16 else "%s_llvm%d" % (name, llvm)

def llvm_test_name(name, llvm):
    """The name of test `name` (ending in _test) for LLVM `llvm`."""
    if llvm == 16:
        return name
    if not name.endswith("_test"):
        fail("test names end in _test: " + name)
    return "%s_llvm%d_test" % (name[:-len("_test")], llvm)

# The headers every hook test program includes: its own and the tests' shared check and
# generator (included relatively: clang compiles the programs outside Bazel's include paths).
HOOK_TEST_HEADERS = [
    "//tests/hook:hook_test.h",
    "//tests/support:check.h",
    "//tests/support:test_rng.h",
]

def omp_hook_program(name, src, target = "host", llvm_versions = LLVM_VERSIONS, **kwargs):
    """`<name>_plain` (no hook) and `<name>_hooked` (libompbatch.a linked before the OpenMP
    runtime), both built from src with the shared hook_test.h, for each LLVM version. target =
    "nvptx" builds them for the GPU (run them with compare.sh and OMPBATCH_COMPARE_GPU=1 on a
    machine with the matching runtime)."""
    copts = list(HOOK_TEST_COPTS)
    for llvm in llvm_versions:
        for suffix, hook in [("_plain", False), ("_hooked", True)]:
            omp_binary(
                name = llvm_program_name(name, llvm) + suffix,
                srcs = [src] + HOOK_TEST_HEADERS,
                target = target,
                hook = hook,
                copts = copts,
                llvm = llvm,
                testonly = True,
                **kwargs
            )

def omp_hook_compare_test(
        name,
        program,
        expects = [],
        status = None,
        stats = True,
        state = None,
        program_args = [],
        env = {},
        size = "small",
        timeout = "short",
        llvm_versions = LLVM_VERSIONS,
        **kwargs):
    """A sh_test running compare.sh on omp_hook_program `program`, for each LLVM version:
    plain, hooked, hooked with statistics, LD_PRELOAD=libompbatch.so and OMPBATCH_DISABLE=1
    must behave alike, and the statistics line must meet `expects` ("key>=N", see compare.sh).
    `env`: variables every variant runs with (compare.sh --env), so that the GPU pack, which
    reads the options from the same file, sets them too."""
    for llvm in llvm_versions:
        _compare_test(
            llvm_test_name(name, llvm),
            llvm_program_name(program, llvm),
            expects,
            status,
            stats,
            state,
            program_args,
            env,
            size,
            timeout,
            **kwargs
        )

def _compare_test(name, program, expects, status, stats, state, program_args, env, size,
                  timeout, **kwargs):
    args = ["--name", name]
    for var in sorted(env.keys()):
        args += ["--env", "%s=%s" % (var, env[var])]
    for expect in expects:
        args += ["--expect", expect]
    if status != None:
        args += ["--status", str(status)]
    if not stats:
        args.append("--no-stats")
    if state != None:
        args += ["--state", state]
    if program_args:
        args += ["--"] + program_args

    # The options live in <name>.args (one per line) so that GPU runs of the nvptx builds
    # (tests/gpu_pack) apply exactly the same checks.
    native.genrule(
        name = name + "_args",
        outs = [name + ".args"],
        cmd = "printf '%s\\n' " + " ".join(["'%s'" % a for a in args]) + " > $@",
        testonly = True,
    )
    native.sh_test(
        name = name,
        size = size,
        timeout = timeout,
        srcs = ["compare.sh"],
        args = [
            "$(rootpath :%s_plain)" % program,
            "$(rootpath :%s_hooked)" % program,
            "$(rootpath //:libompbatch.so)",
            "--args-file",
            "$(rootpath :%s.args)" % name,
        ],
        data = [
            ":%s_plain" % program,
            ":%s_hooked" % program,
            ":%s.args" % name,
            "//:libompbatch.so",
        ],
        **kwargs
    )
