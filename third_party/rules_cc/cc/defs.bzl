"""Offline stand-in for @rules_cc: Bazel 4.2.3 still ships the C/C++ rules natively.

Debian's bazel-rules-cc is too new for Bazel 4.2.3, so this re-exports the native rules under the
names that BUILD files load from "@rules_cc//cc:defs.bzl".
"""

cc_library = native.cc_library
cc_binary = native.cc_binary
cc_test = native.cc_test
cc_import = native.cc_import
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
