"""Repository rule for the CUDA toolkit headers (@cuda).

The toolkit is found at $OMPBATCH_CUDA_PATH, or /usr/local/cuda when the variable is unset or
empty. Its include/ directory is symlinked into the repository (see BUILD.cuda), and its root is
written to @cuda//:defs.bzl (CUDA_ROOT) for the genrule that compiles device code with nvcc.
"""

_ENV = "OMPBATCH_CUDA_PATH"
_DEFAULT = "/usr/local/cuda"
_REQUIRED = ["cuda.h", "cudaTypedefs.h", "nvtx3/nvToolsExt.h"]

def _cuda_headers_impl(rctx):
    root = rctx.os.environ.get(_ENV, "") or _DEFAULT
    include = rctx.path(root + "/include")
    missing = [h for h in _REQUIRED if not rctx.path(root + "/include/" + h).exists]
    if missing:
        fail(("ompbatch: CUDA headers not found: %s missing under %s " +
              "(%s=%s). Install the CUDA toolkit (13.0 or newer) or set %s to its root, " +
              "e.g. OMPBATCH_CUDA_PATH=/usr/local/cuda-13.0.") % (
            ", ".join(missing),
            include,
            _ENV,
            rctx.os.environ.get(_ENV, "<unset, default " + _DEFAULT + ">"),
            _ENV,
        ))
    rctx.symlink(include, "include")
    # The library's device code is compiled to PTX at build time with the toolkit's nvcc,
    # called by its absolute path (nvcc finds its installation from where it really lives).
    rctx.file("defs.bzl", 'CUDA_ROOT = "%s"\n' % root)
    rctx.symlink(rctx.attr.build_file, "BUILD.bazel")
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)

cuda_headers_repository = repository_rule(
    implementation = _cuda_headers_impl,
    attrs = {
        "build_file": attr.label(allow_single_file = True, mandatory = True),
    },
    environ = [_ENV],
    local = True,
    doc = "CUDA toolkit headers from $OMPBATCH_CUDA_PATH (default /usr/local/cuda).",
)
