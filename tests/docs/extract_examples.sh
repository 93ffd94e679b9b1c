#!/usr/bin/env bash
# Writes the manual's examples (the code blocks opened with "```c example") as one C file, so
# that a test compiles and links them against the library: an example that no longer matches
# the header fails the build. Each example is top-level code (functions); a line directive
# before each points compiler messages at the page and line.
# usage: extract_examples.sh <out.c> <page.md>...
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 <out.c> <page.md>..." >&2; exit 2; }
out=$1
shift
{
    echo '/* Generated from the manual by tests/docs/extract_examples.sh; do not edit. */'
    echo '#define _GNU_SOURCE'
    echo '#include <dlfcn.h>'
    echo '#include <inttypes.h>'
    echo '#include <stdint.h>'
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo '#include <string.h>'
    echo ''
    echo '#include "ompbatch.h"'
    echo ''
    echo '/* Every example is an external function: nothing here calls them. */'
    for page in "$@"; do
        awk -v page="$page" '
            /^```c example[ \t]*$/ { inside = 1; examples++; print "#line " NR + 1 " \"" page "\""; next }
            inside && /^```[ \t]*$/ { inside = 0; print ""; next }
            inside { print }
            END {
                if (inside) { print "unterminated example in " page > "/dev/stderr"; exit 1 }
            }
        ' "$page"
    done
} >"$out"
n=$(grep -c '^#line [0-9]* "' "$out")
[ "$n" -ge 2 ] || { echo "no \`\`\`c example blocks found in $*" >&2; exit 1; }
{
    echo '#line 1 "examples_main.c"'
    echo "int main(void)"
    echo "{"
    echo "    puts(\"api_examples: $n examples of the manual compiled and linked\");"
    echo "    return 0;"
    echo "}"
} >>"$out"
