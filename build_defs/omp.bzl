"""OpenMP offload programs built with LLVM's clang, against libomptarget 16 or 19.

Bazel's C toolchain here is gcc, which cannot offload, so these programs are compiled and linked
by a genrule that calls LLVM's clang by its absolute path. LLVM 16 is Debian's clang-16,
clang-tools-16 and libomp-16-dev (through /usr/bin/clang-16 clang cannot find
clang-offload-packager, hence /usr/lib/llvm-16/bin/clang). LLVM 19 is Debian's clang-19 and
clang-tools-19 with libomp-19-dev and libomp5-19 unpacked into LLVM19_PREFIX (they cannot be
installed beside libomp-16-dev); its omp.h and runtime come from there. `./run test` installs
both. The toolchains are not inputs Bazel tracks: after upgrading one, `bazel clean`.
"""

LLVM16 = "/usr/lib/llvm-16"

# Where ./run unpacks LLVM 19's OpenMP runtime (libomp-19-dev, libomp5-19).
LLVM19_PREFIX = "/opt/ompbatch/llvm-19"
LLVM19_RUNTIME = LLVM19_PREFIX + "/usr/lib/llvm-19"

# Per LLVM version: the compiler, the runtime's directory (omp.h under lib/clang/N/include).
LLVM = {
    16: struct(clang = LLVM16 + "/bin/clang", lib = LLVM16 + "/lib", include = []),
    19: struct(
        clang = "/usr/lib/llvm-19/bin/clang",
        lib = LLVM19_RUNTIME + "/lib",
        include = ["-I" + LLVM19_RUNTIME + "/lib/clang/19/include"],
    ),
}

# target = "host": LLVM's host-offload target (x86_64), real libomptarget mapping semantics with
# "device" memory in separate host memory; runs anywhere. target = "nvptx": sm_90 (H200) code.
# Under LLVM 16 that is a cubin from the CUDA toolkit's ptxas. LLVM 19's runtime rejects the
# cubins CUDA 13 writes (a newer ELF header), so under 19 the image is LLVM bitcode, compiled
# by the runtime when the program starts (-fopenmp-target-jit; ptxas must be on PATH then).
def omp_target_flags(target, llvm):
    if target == "host":
        return ["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"]
    flags = [
        "-fopenmp",
        "-fopenmp-targets=nvptx64-nvidia-cuda",
        "-Xopenmp-target=nvptx64-nvidia-cuda",
        "-march=sm_90",
        "--cuda-path=/usr/local/cuda",
        "--libomptarget-nvptx-bc-path=" + LLVM[llvm].lib,
        # clang 16 and 19 know older CUDA versions and warn about the CUDA 13 toolkit.
        "-Wno-unknown-cuda-version",
    ]
    if llvm == 19:
        flags.append("-fopenmp-target-jit")
    return flags

OMP_COPTS = ["-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror"]

# A program linked with libompbatch.a that looks the hook's control functions up with
# dlsym(RTLD_DEFAULT) (so that it also builds without ompbatch) needs them pulled out of the
# archive (-u: nothing references them by name) and in its dynamic symbol table (executables
# export only what shared libraries use). -u of a symbol the archive lacks is not an error.
OMP_HOOK_LINKOPTS = [
    "-Wl,-u,ompbatch_hook_set_enabled",
    "-Wl,-u,ompbatch_hook_get_stats",
    "-Wl,-u,ompbatch_hook_reset_stats",
    "'-Wl,--export-dynamic-symbol=ompbatch_hook_*'",
]

def omp_linkopts(llvm):
    lib = LLVM[llvm].lib
    return ["-ldl", "-pthread", "-lm", "-L" + lib, "-Wl,-rpath," + lib]

def omp_binary(name, srcs, target = "host", hook = False, copts = [], llvm = 16, **kwargs):
    """An OpenMP offload executable `name` built from C `srcs` (the first is compiled; others,
    headers among them, are inputs next to it) with LLVM `llvm`'s clang (16 or 19), linked to
    that version's runtime (rpath).

    hook = True links libompbatch.a (//:ompbatch) before the OpenMP runtime, which is how users
    get the hook with `-lompbatch`; the public header's directory is on the include path either
    way.
    """
    lib_srcs = ["//:ompbatch"] if hook else []
    pick_lib = [
        "lib=;",
        "for f in $(locations //:ompbatch); do case $$f in *.a) lib=$$f;; esac; done;",
        "[ -n \"$$lib\" ] || { echo 'no .a among $(locations //:ompbatch)' >&2; exit 1; };",
    ] if hook else ["lib=;"]
    native.genrule(
        name = name + "_build",
        srcs = srcs + ["//:include/ompbatch.h"] + lib_srcs,
        outs = [name],
        cmd = " ".join(pick_lib + [LLVM[llvm].clang] + OMP_COPTS + copts +
                       omp_target_flags(target, llvm) + LLVM[llvm].include + [
            "-I$$(dirname $(location //:include/ompbatch.h))",
            "$(location " + srcs[0] + ")",
            "$$lib",
        ] + omp_linkopts(llvm) + (OMP_HOOK_LINKOPTS if hook else []) + ["-o $@"]),
        message = "Building OpenMP program %s (LLVM %d, %s)" % (name, llvm, target),
        **kwargs
    )
