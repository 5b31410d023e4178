#!/bin/sh
# public_symbols.sh — the symbols libdt exports, one a line, sorted: every
# function or variable named dt_* that an installed header (include/dt/*.h)
# declares, plus the first word of each line of the transitional list.
#
#   public_symbols.sh HEADER_DIR [TRANSITIONAL_FILE]
#
# The headers are the SDK: adding a declaration to include/dt/ exports it at
# the next build, with no list to edit. Comments and preprocessor lines
# (dt_error() and friends are macros) are skipped, and so are names ending
# in _t (types, as in "typedef dt_status_t (*fn)(...)") and names a header
# defines itself (static inline). The build (core/Makefile.am) passes the
# result to libtool's -export-symbols; tests/libdt_exports.sh checks the
# built libdt.so against it.
set -eu
dir=${1:?usage: public_symbols.sh HEADER_DIR [TRANSITIONAL_FILE]}
transitional=${2:-}

set -- "$dir"/*.h
[ -e "$1" ] || { echo "public_symbols.sh: no headers in $dir" >&2; exit 1; }

{
    for h in "$@"; do cat "$h"; echo; done | awk '
    { buf = buf $0 "\n" }
    END {
        # Block comments, also across lines.
        gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", buf)
        n = split(buf, lines, "\n")
        cont = 0
        for (i = 1; i <= n; i++) {
            l = lines[i]
            sub(/\/\/.*/, "", l)
            # Preprocessor lines and their continuations.
            if (cont || l ~ /^[ \t]*#/) {
                cont = (l ~ /\\[ \t]*$/)
                continue
            }
            # static (inline) definitions in a header are not libdt symbols.
            static_line = (l ~ /(^|[^A-Za-z0-9_])static[ \t]/)
            # Functions: a name followed by "(". Variables: extern ... name;
            rest = l
            while (match(rest, /(^|[^A-Za-z0-9_])dt_[A-Za-z0-9_]+[ \t]*\(/)) {
                name = substr(rest, RSTART, RLENGTH)
                sub(/^[^d]*/, "", name)
                sub(/[ \t]*\($/, "", name)
                rest = substr(rest, RSTART + RLENGTH)
                if (name ~ /_t$/)
                    continue
                # The first name of a static line is its own definition; the
                # names it calls are libdt functions like any other.
                if (static_line) { skip[name] = 1; static_line = 0; continue }
                seen[name] = 1
            }
            if (l ~ /^[ \t]*extern[ \t]/ &&
                match(l, /dt_[A-Za-z0-9_]+[ \t]*(\[[^]]*\])?[ \t]*;/)) {
                name = substr(l, RSTART, RLENGTH)
                sub(/[ \t\[;].*$/, "", name)
                seen[name] = 1
            }
        }
        for (s in seen)
            if (!(s in skip))
                print s
    }'
    if [ -n "$transitional" ]; then
        sed -e 's/#.*//' "$transitional" | awk 'NF { print $1 }'
    fi
} | LC_ALL=C sort -u
