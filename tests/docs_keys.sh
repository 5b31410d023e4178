#!/bin/sh
# docs_keys.sh — the hand-written documentation names exactly the keys and
# options the code has (a black-box trial of the docs found options there
# that CONFIG.md never listed). The code's side comes from the key tables
# (gen-config-man --keys, as dt-config(5) is made) and from `dtctl --help`:
#   - docs/CONFIG.md's tables of the core sections, both ways;
#   - conf/cluster.ini ("every key of the core and of the default
#     plugins"), both ways;
#   - each built plugin's README.md key table, both ways;
#   - every option of `dtctl --help` that sets a configuration value (as
#     `dtctl config` names its origin) is in CONFIG.md's list of them, and
#     every option of `dtctl --help` is in dtctl(1).
set -u
: "${DTCTL:?run through make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dt-docs.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 99            # no ./conf/cluster.ini here
unset DT_CONFIG

gen="$top_builddir/man/gen-config-man"
"$gen" --keys "$top_builddir/plugins/modules" >keys || fail "gen-config-man --keys"
[ "$(wc -l <keys)" -gt 100 ] || fail "only $(wc -l <keys) keys in the tables?"

# Fail when WHAT lists other keys than the tables, naming both sides.
compare() { # WHAT DOC_KEYS CODE_KEYS
    sort -u "$2" >doc.sorted
    sort -u "$3" >code.sorted
    only_doc=$(comm -23 doc.sorted code.sorted | tr '\n' ' ')
    only_code=$(comm -13 doc.sorted code.sorted | tr '\n' ' ')
    [ -z "$only_doc$only_code" ] ||
        fail "$1: keys no table has: ${only_doc:-none}; keys it lacks: ${only_code:-none}"
}

core='^(cluster|train|model|data|collectives)\.'

# docs/CONFIG.md: "### [section]" then rows "| key | type | default | ...".
awk '/^### \[/ { s = substr($2, 2, length($2) - 2); next }
     /^## / { s = "" }
     s != "" && /^\| [a-z_0-9]+ +\|/ && $2 != "key" { print s "." $2 }' \
    "$top_srcdir/docs/CONFIG.md" >config-md
grep -E "$core" keys >core-keys
compare "docs/CONFIG.md" config-md core-keys

# conf/cluster.ini: "[section]" lines, keys commented out as "#key = ...".
awk '/^#? *\[[a-z.]+\] *$/ { s = $0; gsub(/[#\[\] ]/, "", s); next }
     /^[#;]?[a-z_0-9]+ *=/ { k = $0; sub(/^[#;]/, "", k); sub(/ *=.*/, "", k)
                             print s "." k }' \
    "$top_srcdir/conf/cluster.ini" >cluster-ini
grep -E "$core|^(launcher\.local|transport\.tcp|storage\.local|optimizer\.sgd)\." \
    keys >default-keys
compare "conf/cluster.ini" cluster-ini default-keys

# Each built plugin's README.md: table rows whose first cell is a `key`.
n=0
for so in "$top_builddir"/plugins/modules/dt_*.so; do
    [ -e "$so" ] || continue
    base=$(basename "$so" .so)                  # dt_transport_tcp
    kind=$(echo "$base" | cut -d_ -f2)
    name=$(echo "$base" | cut -d_ -f3-)
    readme="$top_srcdir/plugins/$kind/$name/README.md"
    [ -f "$readme" ] || fail "plugin $kind.$name has no $readme"
    # shellcheck disable=SC2016 # backquotes of markdown, not sh
    grep -o '^| *`[a-z_0-9]*`' "$readme" | tr -d '|` ' |
        sed "s/^/$kind.$name./" >readme-keys
    grep "^$kind\\.$name\\." keys >plugin-keys
    compare "plugins/$kind/$name/README.md" readme-keys plugin-keys
    n=$((n + 1))
done
[ "$n" -ge 4 ] || fail "only $n plugins built?"

# The options of `dtctl --help`, from its "options" block: the long
# spelling (or the only one) and its metavar.
"$DTCTL" --help >help 2>&1 || fail "dtctl --help"
sed -n '/^options/,$p' help |
    grep -oE '^ {2,6}(-[a-zA-Z], )?--?[a-z][a-z-]*( [][A-Z.=]+)?' |
    sed 's/^ *//; s/^-[a-zA-Z], //' >options
[ "$(wc -l <options)" -ge 15 ] || fail "only $(wc -l <options) options in dtctl --help?"

# dtctl(1) has each one on a .B/.BI/.BR line (groff writes - as \-).
sed -n '/^\.B/{s/\\-/-/g; s/\\f[BIR]//g; s/"//g; p}' \
    "$top_srcdir/man/dtctl.1" >man-options
while read -r opt _; do
    grep -qE -- "(^| )$opt( |,|\$)" man-options ||
        fail "dtctl --help has $opt, dtctl(1) does not"
done <options

# Each option that sets a value: given a sample argument, `dtctl config`
# names it as the origin, "command line (-n/--np)"; CONFIG.md must list
# one of those spellings.
sed -n '/^## Layers and precedence/,/^## [^L]/p' "$top_srcdir/docs/CONFIG.md" \
    >precedence
grep -q -- '--set' precedence || fail "no \"Layers and precedence\" in docs/CONFIG.md"
printf 'localhost slots=2\n' >hostfile
printf '[train]\ncheckpoint_dir = ck\n' >job.ini
checked=0
while read -r opt metavar; do
    case "$opt:${metavar:-}" in
        --launcher:*) arg=local ;; --transport:*) arg=tcp ;;
        --storage:*) arg=local ;;
        --config:*) continue ;;         # names a file, sets no key
        *:N|*:K|*:M) arg=2 ;;
        *:LIST) arg=localhost:2 ;;
        *:FILE) arg=hostfile ;;
        *:IF) arg=lo ;;
        *:SEC.KEY=VAL) arg=train.epochs=2 ;;
        *:NAME*) arg=FOO=1 ;;
        *:) arg= ;;
        *) fail "no sample argument for $opt $metavar: teach docs_keys.sh one" ;;
    esac
    # shellcheck disable=SC2086
    "$DTCTL" $opt $arg config job.ini >out 2>&1 </dev/null || continue
    origin=$(sed -n 's/.*# command line (\(-[^)]*\))$/\1/p' out | sort -u)
    [ -n "$origin" ] || continue
    for o in $origin; do
        found=0
        for spelling in $(echo "$o" | tr '/' ' '); do
            grep -q -- "\`$spelling" precedence && found=1
        done
        [ $found -eq 1 ] ||
            fail "$opt sets a value (origin: command line ($o)) but docs/CONFIG.md, \"Layers and precedence\", does not list $o"
    done
    checked=$((checked + 1))
done <options
[ "$checked" -ge 8 ] || fail "only $checked options set a value?"

echo "PASS: CONFIG.md, cluster.ini and $n plugin READMEs list the tables' keys; $checked setting options in CONFIG.md; dtctl(1) has every option"
