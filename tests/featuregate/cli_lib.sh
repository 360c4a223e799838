# cli_lib.sh - sourced by the featuregate command-line tests: a scratch
# directory removed on exit, pass/fail counters with a summary helper, and
# run/has for the upgrade-check tests (which set $fg to the featuregate binary).
work=$(mktemp -d)
failures=0
passes=0
trap 'rm -rf "$work"' EXIT

pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# summary NAME: prints the counts; the exit status is 0 only without failures.
summary() {
    echo "$1: $passes passed, $failures failed"
    [ "$failures" -eq 0 ]
}

# run WANT_RC ARGS... : runs `$fg upgrade-check ARGS` into $work/out and
# $work/err, and checks its exit status.
run() {
    want=$1; shift
    "$fg" upgrade-check "$@" >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "upgrade-check $* exited $rc, want $want: $(cat "$work/err")"; return 1
    fi
    return 0
}

# has FILE TEXT : FILE contains TEXT (fixed string).
has() {
    if grep -qF -- "$2" "$1"; then pass; else fail "'$2' not in $(basename "$1"): $(head -c 600 "$1")"; fi
}
