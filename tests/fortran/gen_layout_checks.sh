#!/usr/bin/env bash
# Reads include/ompbatch.h and writes the two halves of fortran_layout_test, so that the test
# follows the header by itself:
#
#   OUT.c    the C truth, as the C compiler sees the header: sizeof and offsetof of every
#            field of every public struct, the value and size of every constant (object-like
#            OMPBATCH_* macros and enumerators), and the address of every OMPBATCH_API
#            function; each behind an accessor taking the entry's index.
#   OUT.inc  Fortran subroutines (included by layout_test.f90) that measure the module's side
#            of every entry, by the same index: c_sizeof and c_loc offsets of the derived
#            types' fields, the named constants, c_funloc of the bind(C) interfaces.
#
# A field, constant or function the module lacks makes OUT.inc fail to compile (naming it);
# a field in another order or of another type, a constant with another value or kind, an
# interface bound to another symbol makes the test fail at run time.
#
# Names that differ in the module (Fortran names are case-insensitive, and C strings are
# wrapped): OMPBATCH_VERSION is OMPBATCH_MODULE_VERSION; a function returning const char * is
# bound as <name>_c.
#
# usage: gen_layout_checks.sh <ompbatch.h> <OUT.c> <OUT.inc>
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 <ompbatch.h> <OUT.c> <OUT.inc>" >&2; exit 2; }
header=$1 out_c=$2 out_inc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() {
    echo "gen_layout_checks: $*" >&2
    exit 1
}

# ---- what the header declares ---------------------------------------------------------------

# The preprocessed header on one line: comments gone, the status X-macro expanded into its
# enumerators.
gcc -E -P -x c "$header" | tr '\n' ' ' >"$tmp/flat"

# Struct fields, "struct field" per line, in declaration order. Only plain declarations
# ("type name;") are understood; anything else stops the generator rather than being skipped.
awk '{
    text = $0
    while (match(text, /typedef struct [A-Za-z_][A-Za-z0-9_]* *\{[^}]*\}/)) {
        decl = substr(text, RSTART, RLENGTH)
        text = substr(text, RSTART + RLENGTH)
        name = decl
        sub(/^typedef struct /, "", name)
        sub(/ *\{.*/, "", name)
        body = decl
        sub(/^[^{]*\{/, "", body)
        sub(/\}$/, "", body)
        n = split(body, parts, ";")
        for (i = 1; i <= n; i++) {
            field = parts[i]
            gsub(/^ +| +$/, "", field)
            if (field == "")
                continue
            if (field ~ /[\[\](),:]/) {
                print "cannot read the declaration \"" field "\" of " name > "/dev/stderr"
                exit 1
            }
            sub(/.*[ *]/, "", field)
            print name, field
        }
    }
}' "$tmp/flat" >"$tmp/fields"

# Enumerators of the public enums, in declaration order.
awk '{
    text = $0
    while (match(text, /typedef enum [A-Za-z_][A-Za-z0-9_]* *\{[^}]*\}/)) {
        decl = substr(text, RSTART, RLENGTH)
        text = substr(text, RSTART + RLENGTH)
        body = decl
        sub(/^[^{]*\{/, "", body)
        sub(/\}$/, "", body)
        n = split(body, parts, ",")
        for (i = 1; i <= n; i++) {
            item = parts[i]
            gsub(/^ +| +$/, "", item)
            sub(/ *=.*/, "", item)
            if (item != "")
                print item
        }
    }
}' "$tmp/flat" >"$tmp/enumerators"

# Object-like OMPBATCH_* macros with a value (not the include guard, not the visibility
# attribute, not the function-like status list), sorted.
gcc -dM -E -x c "$header" |
    sed -n 's/^#define \(OMPBATCH_[A-Z0-9_]*\) .*/\1/p' |
    grep -vx -e OMPBATCH_H -e OMPBATCH_API | sort >"$tmp/macros"
cat "$tmp/enumerators" "$tmp/macros" >"$tmp/constants"

# OMPBATCH_API functions (a declaration may wrap: the name ends at the first '('), and which of
# them return a C string.
sed -n '/^OMPBATCH_API /{s/(.*//;s/.*[ *]//;p}' "$header" >"$tmp/functions"
sed -n '/^OMPBATCH_API const char \*/{s/(.*//;s/.*[ *]//;p}' "$header" >"$tmp/string_functions"

[ "$(wc -l <"$tmp/fields")" -ge 40 ] || die "found only $(wc -l <"$tmp/fields") struct fields in $header"
[ "$(wc -l <"$tmp/constants")" -ge 40 ] || die "found only $(wc -l <"$tmp/constants") constants in $header"
[ "$(wc -l <"$tmp/functions")" -ge 15 ] || die "found only $(wc -l <"$tmp/functions") functions in $header"

fortran_constant() {
    case "$1" in
        OMPBATCH_VERSION) echo OMPBATCH_MODULE_VERSION ;;
        *) echo "$1" ;;
    esac
}

fortran_function() {
    if grep -qx "$1" "$tmp/string_functions"; then echo "$1_c"; else echo "$1"; fi
}

# ---- OUT.c ----------------------------------------------------------------------------------

{
    echo "/* Generated from $(basename "$header") by gen_layout_checks.sh; do not edit. */"
    echo '#include <stddef.h>'
    echo '#include <stdint.h>'
    echo
    echo '#include "ompbatch.h"'
    echo
    echo 'struct layout { size_t offset, size; };'
    echo 'struct constant { int64_t value; size_t size; };'
    echo 'typedef void (*function)(void);'
    echo
    echo 'static const size_t struct_sizes[] = {'
    cut -d' ' -f1 "$tmp/fields" | uniq | sed 's/.*/    sizeof(&),/'
    echo '};'
    echo 'static const struct layout fields[] = {'
    awk '{ printf "    {offsetof(%s, %s), sizeof(((%s *)0)->%s)},\n", $1, $2, $1, $2 }' "$tmp/fields"
    echo '};'
    echo '/* int64_t keeps the bit pattern of the unsigned map-type bits (two'"'"'s complement). */'
    echo 'static const struct constant constants[] = {'
    sed 's/.*/    {(int64_t)(&), sizeof(&)},/' "$tmp/constants"
    echo '};'
    echo 'static const function functions[] = {'
    sed 's/.*/    (function)\&&,/' "$tmp/functions"
    echo '};'
    echo
    echo '#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))'
    echo
    echo 'int layout_c_struct_size(int i, size_t *size)'
    echo '{'
    echo '    if (i < 0 || i >= COUNT(struct_sizes))'
    echo '        return -1;'
    echo '    *size = struct_sizes[i];'
    echo '    return 0;'
    echo '}'
    echo
    echo 'int layout_c_field(int i, size_t *offset, size_t *size)'
    echo '{'
    echo '    if (i < 0 || i >= COUNT(fields))'
    echo '        return -1;'
    echo '    *offset = fields[i].offset;'
    echo '    *size = fields[i].size;'
    echo '    return 0;'
    echo '}'
    echo
    echo 'int layout_c_constant(int i, int64_t *value, size_t *size)'
    echo '{'
    echo '    if (i < 0 || i >= COUNT(constants))'
    echo '        return -1;'
    echo '    *value = constants[i].value;'
    echo '    *size = constants[i].size;'
    echo '    return 0;'
    echo '}'
    echo
    echo '/* 1 when f is the address of function i (what the Fortran interface is bound to). */'
    echo 'int layout_c_function_is(int i, function f)'
    echo '{'
    echo '    if (i < 0 || i >= COUNT(functions))'
    echo '        return -1;'
    echo '    return functions[i] == f;'
    echo '}'
} >"$out_c"

# ---- OUT.inc --------------------------------------------------------------------------------

{
    echo "! Generated from $(basename "$header") by gen_layout_checks.sh; do not edit."
    echo "! Included after CONTAINS in layout_test.f90."
    echo
    echo "subroutine generated_checks()"
    cut -d' ' -f1 "$tmp/fields" | uniq | sed 's/.*/    call check_&()/'
    echo "    call check_constants()"
    echo "    call check_functions()"
    echo "end subroutine generated_checks"
    index=0
    struct_index=0
    for s in $(cut -d' ' -f1 "$tmp/fields" | uniq); do
        echo
        echo "subroutine check_$s()"
        echo "    type($s), target :: v"
        echo "    call check_struct('$s', $struct_index, c_sizeof(v))"
        struct_index=$((struct_index + 1))
        for f in $(awk -v s="$s" '$1 == s { print $2 }' "$tmp/fields"); do
            echo "    call check_field('$s', '$f', $index, &"
            echo "                     c_loc(v), c_loc(v%$f), c_sizeof(v%$f))"
            index=$((index + 1))
        done
        echo "end subroutine check_$s"
    done
    echo
    echo "subroutine check_constants()"
    index=0
    while read -r c; do
        f=$(fortran_constant "$c")
        echo "    call check_constant('$c', '$f', $index, &"
        echo "                        int($f, c_int64_t), storage_size($f))"
        index=$((index + 1))
    done <"$tmp/constants"
    echo "end subroutine check_constants"
    echo
    echo "subroutine check_functions()"
    index=0
    while read -r c; do
        f=$(fortran_function "$c")
        echo "    call check_function('$c', '$f', $index, &"
        echo "                        c_funloc($f))"
        index=$((index + 1))
    done <"$tmp/functions"
    echo "end subroutine check_functions"
} >"$out_inc"
