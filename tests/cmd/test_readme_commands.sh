#!/bin/sh
# test_readme_commands.sh - README.md's "The `ckube` command" block against the
# binaries' own help, both ways: every subcommand `ckube help` lists is in the
# block and the block names no other; for each subcommand, every flag its
# `--help` lists is in the block and the block gives it no other; the block's
# `featuregate` subcommands are those of `featuregate --help`.
#
# Both sides are parsed, nothing is listed here:
# - the block is the first ``` block after the heading; a line starting with
#   `ckube WORD...` opens a subcommand (the words before the first flag or
#   placeholder), indented lines continue it, `# ...` comments are dropped;
#   its flags are the `-x`/`--xyz` words. A flag word with capitals is a
#   pattern, its capitals standing for a lower-case part:
#   `--concurrent-NAME-syncs` covers `--concurrent-gc-syncs` and the like.
# - `ckube help` gives the subcommands (its "Usage:" lines); `ckube CMD --help`
#   gives CMD's flags (the lines that begin with a flag after at most eight
#   blanks, deeper ones continue a description; `-o, --output` being
#   one flag of two spellings). A subcommand whose --help prints the general
#   help has its flags in the section "Cmd flags:". The flags of the section
#   "Flags of every command" (-v, --logging-format, -h) are left out on both
#   sides: README.md speaks of them in a sentence.
#
# Usage: test_readme_commands.sh PATH/TO/ckube PATH/TO/featuregate PATH/TO/README.md
set -u
ckube=$1
featuregate=$2
readme=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

# --- the README's block -----------------------------------------------------------------
awk '/^## The `ckube` command/ { h = 1; next }
     h && /^```/ { if (b) exit; b = 1; next }
     b' "$readme" >"$work/block"
if [ "$(wc -l <"$work/block")" -lt 3 ]; then
    echo "FAIL: no command block after the heading \"## The \`ckube\` command\" in $readme"
    exit 1
fi
# one line per subcommand: NAME<TAB>FLAGS (its lines joined, comments dropped)
awk '{ sub(/[ \t]#.*$/, "") }
     /^ckube / { if (cmd) print cmd "\t" text
                 cmd = ""; n = split($0, w, " ")
                 for (i = 2; i <= n && w[i] ~ /^[a-z][a-z-]*$/; i++) cmd = cmd (cmd ? " " : "") w[i]
                 text = $0; next }
     /^[ \t]/ && cmd { text = text " " $0; next }
     { if (cmd) print cmd "\t" text; cmd = "" }
     END { if (cmd) print cmd "\t" text }' "$work/block" >"$work/readme_cmds"
cut -f1 "$work/readme_cmds" | sort >"$work/readme_names"

# flags_of_text: the -x / --xyz words of stdin (after a blank, "[", "(" or "|"), one a line
flags_of_text() {
    sed -E 's/(^|[][ (|])(--?[A-Za-z][A-Za-z0-9-]*)/\n@\2\n/g' | sed -n 's/^@//p' | sort -u
}

# --- the binary's help --------------------------------------------------------------------
"$ckube" help >"$work/help" 2>&1 || fail "ckube help exits 0"
awk '/^Usage:/ { u = 1; next } u && /^$/ { exit }
     u && /^  ckube / { line = $0; sub(/^ +/, "", line); sub(/  .*$/, "", line) # less the words
                        n = split(line, w, " "); c = ""
                        for (i = 2; i <= n && w[i] ~ /^[a-z][a-z-]*$/; i++) c = c (c ? " " : "") w[i]
                        print c }' "$work/help" | sort >"$work/help_names"
if [ "$(wc -l <"$work/help_names")" -lt 3 ]; then
    echo "FAIL: no subcommands found in the Usage: of ckube help:"; cat "$work/help"
    exit 1
fi

# help_flags FILE [SECTION]: the flag lines of FILE (of SECTION only, when given), one
# flag a line, its spellings joined by a blank ("-o --output")
help_flags() {
    awk -v sec="${2:-}" '
        /^[A-Z].*:$/ || /^Flags of / { in_sec = (sec == "" || index($0, sec) == 1); next }
        in_sec && match($0, /^ +-/) && RLENGTH <= 9 {
                               line = $0; sub(/^ +/, "", line); n = split(line, w, /[ ,]+/)
                               out = ""
                               for (i = 1; i <= n && w[i] ~ /^--?[a-z]/; i++) {
                                   f = w[i]; sub(/[[=].*$/, "", f); out = out (out ? " " : "") f }
                               if (out != "") print out }' "$1"
}
help_flags "$work/help" "Flags of every command" | tr ' ' '\n' | sort -u >"$work/common"
if [ ! -s "$work/common" ]; then
    fail "ckube help has a \"Flags of every command\" section"
fi

cmp -s "$work/readme_names" "$work/help_names" && pass || {
    fail "README's subcommands differ from ckube help's (< README only, > help only):"
    diff "$work/readme_names" "$work/help_names" | grep '^[<>]'
}

while IFS= read -r cmd; do
    # shellcheck disable=SC2086 # the subcommand's words are separate arguments
    "$ckube" $cmd --help >"$work/cmd_help" 2>&1 </dev/null || { fail "ckube $cmd --help exits 0"; continue; }
    if cmp -s "$work/cmd_help" "$work/help"; then
        section="$(printf '%s' "$cmd" | cut -c1 | tr a-z A-Z)$(printf '%s' "$cmd" | cut -c2-) flags:"
        help_flags "$work/help" "$section" >"$work/want_raw"
    else
        help_flags "$work/cmd_help" >"$work/want_raw"
    fi
    # the help's flags less the common ones (a line of spellings is common if any is)
    grep -v -x -F -f "$work/common" "$work/want_raw" | while IFS= read -r spellings; do
        common=0
        for f in $spellings; do grep -q -x -F -- "$f" "$work/common" && common=1; done
        [ "$common" = 0 ] && echo "$spellings"
    done >"$work/want"
    awk -F '\t' -v c="$cmd" '$1 == c { print $2 }' "$work/readme_cmds" | flags_of_text |
        grep -v -x -F -f "$work/common" >"$work/have"
    # the README's flags as anchored regular expressions, in the same order
    sed -E 's/[A-Z][A-Z0-9_]*/[a-z0-9-]+/g; s/^/^/; s/$/$/' "$work/have" >"$work/have_re"
    tr ' ' '\n' <"$work/want" >"$work/want_words"
    # every flag of the help is in the README (any of its spellings, or a pattern)
    while IFS= read -r spellings; do
        # shellcheck disable=SC2086 # one spelling a line
        if [ -s "$work/have_re" ] && printf '%s\n' $spellings | grep -q -E -f "$work/have_re"; then
            pass
        else
            fail "ckube $cmd: $spellings is in its --help but not in README.md"
        fi
    done <"$work/want"
    # every flag of the README is in the help
    while IFS= read -r r && IFS= read -r re <&3; do
        if grep -q -E -- "$re" "$work/want_words"; then
            pass
        else
            fail "ckube $cmd: README.md gives it $r, which its --help does not list"
        fi
    done <"$work/have" 3<"$work/have_re"
done <"$work/help_names"

# --- featuregate ------------------------------------------------------------------------
sed -n 's/^featuregate \([a-z|-]*\).*/\1/p' "$work/block" | tr '|' '\n' | sort >"$work/fg_readme"
"$featuregate" --help 2>&1 | sed -n 's/^  featuregate \([a-z-]*\).*/\1/p' | sort -u >"$work/fg_help"
if [ ! -s "$work/fg_help" ]; then
    fail "featuregate --help lists its subcommands"
elif cmp -s "$work/fg_readme" "$work/fg_help"; then
    pass
else
    fail "README's featuregate subcommands differ from featuregate --help's (< README, > help):"
    diff "$work/fg_readme" "$work/fg_help" | grep '^[<>]'
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
