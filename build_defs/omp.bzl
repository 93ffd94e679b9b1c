"""OpenMP offload programs built with LLVM 16's clang.

Bazel's C toolchain here is gcc, which cannot offload, so these programs are compiled and linked
by a genrule that calls LLVM 16's clang by its absolute path (Debian's clang-16, clang-tools-16
and libomp-16-dev; `./run test` installs them). Through /usr/bin/clang-16 clang cannot find
clang-offload-packager, hence /usr/lib/llvm-16/bin/clang. The toolchain is not an input Bazel
tracks: after upgrading it, `bazel clean`.
"""

LLVM = "/usr/lib/llvm-16"

# target = "host": LLVM's host-offload target (x86_64), real libomptarget mapping semantics with
# "device" memory in separate host memory; runs anywhere. target = "nvptx": sm_90 (H200) code
# through the CUDA toolkit's ptxas; runs only on a GPU machine with the LLVM 16 runtime.
OMP_TARGET_FLAGS = {
    "host": ["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"],
    "nvptx": [
        "-fopenmp",
        "-fopenmp-targets=nvptx64-nvidia-cuda",
        "-Xopenmp-target=nvptx64-nvidia-cuda",
        "-march=sm_90",
        "--cuda-path=/usr/local/cuda",
        "--libomptarget-nvptx-bc-path=" + LLVM + "/lib",
        # clang 16 knows CUDA up to 11.8 and warns about the CUDA 13 toolkit, which works.
        "-Wno-unknown-cuda-version",
    ],
}

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

OMP_LINKOPTS = ["-ldl", "-pthread", "-lm", "-L" + LLVM + "/lib", "-Wl,-rpath," + LLVM + "/lib"]

def omp_binary(name, srcs, target = "host", hook = False, copts = [], **kwargs):
    """An OpenMP offload executable `name` built from C `srcs` (the first is compiled; others,
    headers among them, are inputs next to it).

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
        cmd = " ".join(pick_lib + [LLVM + "/bin/clang"] + OMP_COPTS + copts +
                       OMP_TARGET_FLAGS[target] + [
            "-I$$(dirname $(location //:include/ompbatch.h))",
            "$(location " + srcs[0] + ")",
            "$$lib",
        ] + OMP_LINKOPTS + (OMP_HOOK_LINKOPTS if hook else []) + ["-o $@"]),
        message = "Building OpenMP program " + name + " (LLVM 16, " + target + ")",
        **kwargs
    )
