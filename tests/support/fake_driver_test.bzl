"""The GoogleTest suites' stanzas: unit_test for those that need no driver, fake_driver_test for
those that drive the library through the fake CUDA driver.

The fake (tests/fake_cuda) is loaded as the library's libcuda; the built-in cost model is used
(the fake's timings mean nothing) and no cache file is written. Tests of the calibration set
those variables themselves.
"""

load("@rules_cc//cc:defs.bzl", "cc_test")

TEST_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
]

GTEST_DEPS = [
    "@googletest//:gtest",
    "@googletest//:gtest_main",
]

FAKE_DRIVER = "//tests/fake_cuda:libfake_cuda.so"

FAKE_DRIVER_ENV = {
    "OMPBATCH_CUDA_LIBRARY": "$(rootpath %s)" % FAKE_DRIVER,
    "OMPBATCH_CALIBRATE": "0",
    "OMPBATCH_COST_CACHE": "off",
}

FAKE_DRIVER_DEPS = [
    "//:ompbatch",
    "//tests/fake_cuda:fake_cuda_control",
    "//tests/support",
] + GTEST_DEPS

def fake_driver_test(name, srcs, size = "small", env = {}, data = [], deps = [], **kwargs):
    """cc_test `name` of `srcs` against the fake driver; `env` adds to (or overrides) its
    environment, `data` and `deps` add to its own."""
    cc_test(
        name = name,
        size = size,
        srcs = srcs,
        copts = TEST_COPTS,
        data = [FAKE_DRIVER] + data,
        env = dict(FAKE_DRIVER_ENV, **env),
        linkopts = ["-ldl"],
        deps = FAKE_DRIVER_DEPS + deps,
        **kwargs
    )

def unit_test(name, srcs, size = "small", timeout = "short", deps = [], **kwargs):
    """cc_test `name` of `srcs` for a suite that needs no driver (CPU unit tests)."""
    cc_test(
        name = name,
        size = size,
        timeout = timeout,
        srcs = srcs,
        copts = TEST_COPTS,
        deps = ["//:ompbatch", "//tests/support"] + GTEST_DEPS + deps,
        **kwargs
    )
