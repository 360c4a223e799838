# cli_lib.sh - sourced by the featuregate command-line tests: a scratch
# directory removed on exit, and pass/fail counters with a summary helper.
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
