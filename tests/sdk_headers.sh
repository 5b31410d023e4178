#!/bin/sh
# sdk_headers.sh — every header under include/dt is installed, and each
# one compiles on its own, from the installed tree, as a user's program
# or plugin would include it: C99 and C11, and C++11 (g++), with
# -Wall -Wextra -Werror -pedantic and the warnings HPC builds often add
# (a redundant declaration, a prototype without parameters).
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
: "${top_srcdir:?}" "${top_builddir:?}"
cc=${CC:-cc}
cxx=${CXX:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-headers.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM

make -C "$top_builddir/include" install DESTDIR="$tmp/root" \
    includedir=/inc >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "make install of include/"; }
inc="$tmp/root/inc"

strict="-Wall -Wextra -Werror -pedantic -Wredundant-decls"
have_cxx=0
echo 'int main(void) { return 0; }' >"$tmp/probe.cc"
$cxx -c -o "$tmp/probe.o" "$tmp/probe.cc" >/dev/null 2>&1 && have_cxx=1

n=0
for src in "$top_srcdir"/include/dt/*.h; do
    h=${src##*/}
    [ -f "$inc/dt/$h" ] ||
        fail "include/dt/$h is not installed: add it to include/Makefile.am"
    printf '#include <dt/%s>\nint dt_header_test_unused;\n' "$h" >"$tmp/t.c"
    for std in c99 c11; do
        $cc -std=$std $strict -Wstrict-prototypes -I"$inc" -c \
            -o "$tmp/t.o" "$tmp/t.c" >"$tmp/cc.log" 2>&1 ||
            { cat "$tmp/cc.log" >&2; fail "<dt/$h> does not compile alone as $std"; }
    done
    if [ $have_cxx -eq 1 ]; then
        cp "$tmp/t.c" "$tmp/t.cc"
        $cxx -std=c++11 $strict -I"$inc" -c -o "$tmp/t.o" "$tmp/t.cc" \
            >"$tmp/cc.log" 2>&1 ||
            { cat "$tmp/cc.log" >&2; fail "<dt/$h> does not compile alone as C++11"; }
    fi
    n=$((n + 1))
done
[ $n -gt 0 ] || fail "no headers under $top_srcdir/include/dt"
[ $have_cxx -eq 1 ] || echo "note: no C++ compiler ($cxx): C++ not checked"
echo "ok: $n installed headers compile alone (C99, C11$([ $have_cxx -eq 1 ] && echo ', C++11'))"
