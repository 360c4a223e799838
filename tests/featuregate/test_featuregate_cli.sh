#!/bin/sh
# test_featuregate_cli.sh - the `featuregate` tool as a user meets it: eval
# (P1-P10: versions, window, sources and their precedence, JSON output, exit
# codes, stdout empty on error), list (docs table), lint, usage errors.
# Usage: test_featuregate_cli.sh PATH/TO/featuregate DATA_DIR
set -u
fg=$1
data=$2
. "$(dirname "$0")/cli_lib.sh"

# eval_is "Name=true Other=absent ..." ARGS... : exit 0, one JSON object on
# stdout (compact, sorted keys) holding exactly these values.
eval_is() {
    want=$1; shift
    if ! "$fg" eval --features "$data/list.yaml" "$@" >"$work/out" 2>"$work/err"; then
        fail "eval $* exited non-zero: $(cat "$work/err")"; return
    fi
    if [ "$(wc -l <"$work/out")" -ne 1 ] || ! grep -q '^{.*}$' "$work/out"; then
        fail "eval $*: not one JSON object: $(cat "$work/out")"; return
    fi
    for kv in $want; do
        k=${kv%%=*}; v=${kv#*=}
        if [ "$v" = absent ]; then
            grep -qF "\"$k\":" "$work/out" && { fail "eval $*: $k present"; return; }
        else
            grep -qF "\"$k\":$v" "$work/out" || { fail "eval $*: want $k=$v in $(cat "$work/out")"; return; }
        fi
    done
    pass
}

# eval_fails WORD ARGS... : exit 1, nothing on stdout, one stderr line with WORD
eval_fails() {
    word=$1; shift
    "$fg" eval --features "$data/list.yaml" "$@" >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" -ne 1 ]; then fail "eval $* exited $rc, want 1"; return; fi
    if [ -s "$work/out" ]; then fail "eval $* wrote to stdout"; return; fi
    if [ "$(wc -l <"$work/err")" -ne 1 ]; then fail "eval $*: stderr not one line"; return; fi
    if grep -qF -- "$word" "$work/err"; then pass; else fail "eval $*: '$word' not in $(cat "$work/err")"; fi
}

B="--binary-version 1.34"
# P1, P9: defaults at the binary version; every non-PreAlpha gate listed.
eval_is 'AllAlpha=false AllBeta=false TestAlpha=false TestBeta=true TestGA=true TestLocked=true TestOld=false' $B
eval_is 'TestGA=true' --binary-version 1.34.7
# P2, P3: emulation window and syntax.
eval_is 'TestBeta=false TestLocked=false TestOld=true TestAlpha=false' $B --emulated-version 1.31
eval_is 'TestAlpha=absent TestBeta=false' --binary-version 1.33 --emulated-version v1.30.0 --binary-version 1.30
eval_fails "emulation version 1.30 is not between [1.31, 1.34.0]" $B --emulated-version 1.30
eval_fails "emulation version 1.35 is not between" $B --emulated-version 1.35
eval_fails "patch version not allowed, got: kube=1.32.1" $B --emulated-version 1.32.1
eval_fails "banana" $B --emulated-version banana
eval_fails "invalid --binary-version" --binary-version x
# V4: a gate not yet existing cannot be set, not even to false.
eval_fails "cannot set feature gate TestAlpha to false, feature is PreAlpha at emulated version 1.30" --binary-version 1.30 --feature-gates TestAlpha=false
# S3, S4, S1 errors name the gate or value.
eval_fails "unrecognized feature gate: Nope" $B --feature-gates Nope=true
eval_fails "cannot set feature gate TestLocked to false, feature is locked to true" $B --feature-gates TestLocked=false
eval_fails "invalid value of TestAlpha=yes" $B --feature-gates TestAlpha=yes
eval_fails "missing bool value for TestAlpha" $B --feature-gates TestAlpha
eval_fails "unrecognized feature gate: " $B --feature-gates =true
# S8-S10: AllAlpha/AllBeta and explicit values.
eval_is 'TestAlpha=true AllAlpha=true' $B --feature-gates AllAlpha=true
eval_is 'TestBeta=false' $B --feature-gates AllBeta=false
eval_is 'TestAlpha=false' $B --feature-gates TestAlpha=false,AllAlpha=true
# P6, P10: repeated flags joined, last wins; duplicates in one flag, last wins.
eval_is 'TestAlpha=false' $B --feature-gates TestAlpha=true --feature-gates TestAlpha=false
eval_is 'TestAlpha=true' $B --feature-gates TestAlpha=false,TestAlpha=true
# P8, P5: config file, flags override it, explicit file value beats AllAlpha flag.
cat >"$work/config.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
featureGates:
  TestAlpha: false
  TestBeta: false
YAML
eval_is 'TestAlpha=false TestBeta=false' $B --config "$work/config.yaml"
eval_is 'TestBeta=true' $B --config "$work/config.yaml" --feature-gates TestBeta=true
eval_is 'TestAlpha=false AllAlpha=true' $B --config "$work/config.yaml" --feature-gates AllAlpha=true
eval_fails "nope.yaml" $B --config "$work/nope.yaml"
printf 'featureGates:\n  TestAlpha: maybe\n' >"$work/bad.yaml"
eval_fails "TestAlpha" $B --config "$work/bad.yaml"
printf 'featureGates: [\n' >"$work/malformed.yaml"
eval_fails "malformed YAML" $B --config "$work/malformed.yaml"
# P7, P5: environment only with --env, below config and flags, bad values warned.
KUBE_FEATURE_TestAlpha=true eval_is 'TestAlpha=false' $B
KUBE_FEATURE_TestAlpha=true eval_is 'TestAlpha=true' $B --env
KUBE_FEATURE_TestAlpha=true eval_is 'TestAlpha=false' $B --env --config "$work/config.yaml"
KUBE_FEATURE_TestBeta=false eval_is 'TestBeta=true' $B --env --feature-gates TestBeta=true
KUBE_FEATURE_TestBeta=' false' eval_is 'TestBeta=true' $B --env
if grep -q 'TestBeta' "$work/err"; then pass; else fail "env: invalid value not warned"; fi
KUBE_FEATURE_TestLocked=false eval_is 'TestLocked=true' $B --env
KUBE_FEATURE_testalpha=true eval_is 'TestAlpha=false' $B --env
# V10: alpha features on while emulating an older version: a warning on stderr only.
eval_is 'TestAlpha=true' $B --emulated-version 1.33 --feature-gates TestAlpha=true
if grep -q 'component has alpha features enabled in emulated version, this is unsupported features=\[TestAlpha\]' "$work/err"; then pass; else fail "V10 warning: $(cat "$work/err")"; fi
eval_is 'TestAlpha=true' $B --feature-gates TestAlpha=true
if [ ! -s "$work/err" ]; then pass; else fail "V10 warning without emulation: $(cat "$work/err")"; fi
# O3: warnings go to stderr, never stdout.
eval_is 'TestGA=false' $B --feature-gates TestGA=false
if grep -q 'Warning: setting GA feature gate' "$work/err"; then pass; else fail "GA warning"; fi
# Bad lists.
"$fg" eval --features "$data/list-bad-stage.yaml" >"$work/out" 2>"$work/err"
if [ $? -eq 1 ] && [ ! -s "$work/out" ] && grep -q TestBadStage "$work/err"; then pass; else fail "bad list"; fi
"$fg" eval --features "$work/missing.yaml" >"$work/out" 2>"$work/err"
if [ $? -eq 1 ] && grep -q missing.yaml "$work/err"; then pass; else fail "missing list"; fi

# --- list ---
"$fg" list --features "$data/list.yaml" -o markdown >"$work/out" 2>&1 &&
    grep -q '^| `TestBeta` | `true` | Beta | 1.32 | - | no |$' "$work/out" && pass || fail "list markdown"
"$fg" list --features "$data/list.yaml" -o json >"$work/out" 2>&1 &&
    [ "$(grep -c '"name":' "$work/out")" -eq 8 ] && pass || fail "list json"
"$fg" list --features "$data/list.yaml" >"$work/out" 2>&1 && grep -q '^FEATURE' "$work/out" && pass || fail "list table"

# --- lint ---
"$fg" lint --features "$data/list.yaml" >"$work/out" 2>&1 && [ ! -s "$work/out" ] && pass || fail "lint clean"
"$fg" lint --features "$data/list-lint-bad.yaml" >"$work/out" 2>&1
if [ $? -eq 1 ] && [ "$(wc -l <"$work/out")" -eq 6 ] && grep -q '^Zz: ' "$work/out"; then pass; else fail "lint findings"; fi

# L3: removals against the previous list, at the release's binary version.
"$fg" lint --features "$data/list.yaml" --previous "$data/list-previous.yaml" --binary-version 1.35 >"$work/out" 2>&1
if [ $? -eq 1 ] && [ "$(wc -l <"$work/out")" -eq 3 ] && grep -q '^ZBetaGone: feature ZBetaGone cannot be removed while in beta$' "$work/out"; then pass; else fail "lint --previous: $(cat "$work/out")"; fi
"$fg" lint --features "$data/list-previous.yaml" --previous "$data/list-previous.yaml" >"$work/out" 2>&1 && [ ! -s "$work/out" ] && pass || fail "lint --previous, nothing removed"

# --- usage ---
"$fg" --help >"$work/out" 2>&1 && grep -q 'featuregate eval' "$work/out" && pass || fail "--help"
# usage_fails WORD ARGS... : exit 1, nothing on stdout, one stderr line with WORD
usage_fails() {
    word=$1; shift
    "$fg" "$@" >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" -eq 1 ] && [ ! -s "$work/out" ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
        grep -qF -- "$word" "$work/err"; then pass; else fail "$* exited $rc: $(cat "$work/err")"; fi
}
usage_fails 'unknown flag: --bogus' eval --features "$data/list.yaml" --bogus
usage_fails 'unknown command: frobnicate' frobnicate
usage_fails '--features is required' eval
usage_fails 'flag needs an argument: --features' eval --features
usage_fails 'unknown output format' list --features "$data/list.yaml" -o yaml
usage_fails 'unexpected argument: extra' lint --features "$data/list.yaml" extra

summary "featuregate cli"
