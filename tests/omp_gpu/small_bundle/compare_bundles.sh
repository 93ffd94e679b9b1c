#!/usr/bin/env bash
# Runs the pack's programs against two unpacked runtime bundles (the original and the small one)
# on this GPU-less machine and demands identical stdout, stderr and exit status, under several
# environments: default policy (host fallback), OMP_TARGET_OFFLOAD=MANDATORY (fatal error, 134),
# OMP_TARGET_OFFLOAD=DISABLED, each with and without LD_BIND_NOW=1, plus LIBOMPTARGET_INFO /
# LIBOMPTARGET_DEBUG variants. Also checks with LD_DEBUG=libs that every object the small run
# initialises comes from its bundle or the base C runtime.
# usage: compare_bundles.sh ORIG_DIR SMALL_DIR PACK_DIR
set -uo pipefail
orig=$(cd "$1" && pwd) small=$(cd "$2" && pwd) pack=$(cd "$3" && pwd)
out=$(mktemp -d /tmp/cmp_bundles.XXXXXX)
same=0 differ=0 nondet=0
runit() { # runit BUNDLE TAG ENV... -- PROGRAM ARGS...
    local b=$1 tag=$2; shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    (cd "$pack" && env -i HOME=/tmp PATH="$b/bin:/usr/bin:/bin" LD_LIBRARY_PATH="$b/lib" \
        LD_PRELOAD="$b/lib/libnvptx_jit_init.so" ${envs[@]+"${envs[@]}"} \
        timeout 120 "$@" >"$out/$tag.out" 2>"$out/$tag.err"; echo $? >"$out/$tag.rc") 2>/dev/null
}
# orig_varies TAG: reruns the original bundle up to 5 times; true when a rerun's output differs
# from its first run (the program is nondeterministic by itself)
orig_varies() {
    local tag=$1 i
    for i in 2 3 4 5 6; do
        runit "$orig" "$tag.orig$i" ${e[@]+"${e[@]}"} -- "./bin/$prog" ${args[@]+"${args[@]}"}
        cmp -s "$out/$tag.orig.out" "$out/$tag.orig$i.out" && cmp -s "$out/$tag.orig.err" "$out/$tag.orig$i.err" ||
            return 0
    done
    return 1
}
progs=()
for p in "$pack"/bin/*_nvptx*; do progs+=("$(basename "$p")"); done
for prog in "${progs[@]}"; do
    case "$prog" in
        hook_bench_nvptx) args=(--reps 1 --quick) ;;
        stencil_nvptx | halo_nvptx) args=() ;;
        *) args=(12345) ;;
    esac
    for envset in "" "OMP_TARGET_OFFLOAD=MANDATORY" "OMP_TARGET_OFFLOAD=DISABLED" \
        "LD_BIND_NOW=1" "LD_BIND_NOW=1 OMP_TARGET_OFFLOAD=MANDATORY" \
        "LD_BIND_NOW=1 OMP_TARGET_OFFLOAD=DISABLED" "LIBOMPTARGET_INFO=-1 OMP_TARGET_OFFLOAD=MANDATORY" \
        "LIBOMPTARGET_DEBUG=1 OMP_TARGET_OFFLOAD=MANDATORY"; do
        # shellcheck disable=SC2206
        e=($envset)
        tag="$prog.$(echo "${envset:-default}" | tr ' =' '_-')"
        runit "$orig" "$tag.orig" ${e[@]+"${e[@]}"} -- "./bin/$prog" ${args[@]+"${args[@]}"}
        runit "$small" "$tag.small" ${e[@]+"${e[@]}"} -- "./bin/$prog" ${args[@]+"${args[@]}"}
        # timing lines of the benchmark and the bundle's own path differ by nature
        norm() {
            sed -e "s#$orig#BUNDLE#g; s#$small#BUNDLE#g" "$1" | case "$prog" in
                hook_bench_nvptx | stencil_nvptx | halo_nvptx) sed -E 's/[0-9]+(\.[0-9]+)? ?(us|ms|s|x|%)/T/g; s/ +/ /g' ;;
                *) cat ;;
            esac
        }
        if [ "$(cat "$out/$tag.orig.rc")" = "$(cat "$out/$tag.small.rc")" ] &&
            cmp -s <(norm "$out/$tag.orig.out") <(norm "$out/$tag.small.out") &&
            cmp -s <(norm "$out/$tag.orig.err") <(norm "$out/$tag.small.err"); then
            same=$((same + 1))
            printf 'same    %-58s rc=%s out=%sB err=%sB\n' "$tag" "$(cat "$out/$tag.orig.rc")" \
                "$(wc -c <"$out/$tag.orig.out")" "$(wc -c <"$out/$tag.orig.err")"
        elif [ "$prog" != "${prog#async_threads}" ] &&
            [ "$(cat "$out/$tag.orig.rc")" = "$(cat "$out/$tag.small.rc")" ] && orig_varies "$tag" "$@"; then
            # its threads interleave their messages: two runs of the ORIGINAL differ as well, so
            # only the exit status can be compared
            same=$((same + 1)); nondet=$((nondet + 1))
            printf 'same rc %-58s rc=%s (output differs between two runs of the original too)\n' "$tag" "$(cat "$out/$tag.orig.rc")"
        else
            differ=$((differ + 1))
            echo "DIFFER  $tag: rc $(cat "$out/$tag.orig.rc") vs $(cat "$out/$tag.small.rc")"
            diff <(norm "$out/$tag.orig.out") <(norm "$out/$tag.small.out") | head -5
            diff <(norm "$out/$tag.orig.err") <(norm "$out/$tag.small.err") | head -5
        fi
    done
done
# Which objects the small bundle's run initialises (LD_DEBUG=libs), and from where.
bad=0
(cd "$pack" && env -i PATH="$small/bin:/usr/bin:/bin" LD_LIBRARY_PATH="$small/lib" \
    LD_PRELOAD="$small/lib/libnvptx_jit_init.so" LD_DEBUG=libs ./bin/maps_basic_nvptx_plain 1 \
    2>&1 >/dev/null) | sed -n 's/.*calling init: //p' | sort -u >"$out/inits.txt"
while read -r path; do
    case "$path" in
        "$small"/lib/*) ;;
        */ld-linux-x86-64.so.2 | */libc.so.6 | */libm.so.6 | */libstdc++.so.6 | */libgcc_s.so.1) ;;
        *) echo "initialised outside the bundle: $path"; bad=1 ;;
    esac
done <"$out/inits.txt"
echo "LD_DEBUG=libs: $(wc -l <"$out/inits.txt") objects initialised, outside bundle/base: $bad"
echo "compare_bundles: $same identical ($nondet of them by exit status only: nondeterministic), $differ differing (outputs in $out)"
[ "$differ" = 0 ] && [ "$bad" = 0 ]
