# lib.sh - what the shell benchmarks share; sourced, after `cd` to the top of the tree.
#
#   ckube=$(bench_ckube)     the binary to measure: $CKUBE when set, else build-rel's
#                            ckube built as users run it (RelWithDebInfo, jemalloc)
#   summary < numbers        the median of the numbers on stdin and their range,
#                            "MEDIAN (MIN-MAX)"
#   bench_install NAME PKG.. installs the Debian packages PKG with apt (through sudo
#                            when not root), saying so as NAME; nothing without PKG

bench_ckube() {
    if [ -n "${CKUBE:-}" ]; then
        echo "$CKUBE"
        return
    fi
    cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
    cmake --build build-rel --target ckube -j "$(nproc)" >/dev/null
    echo build-rel/cmd/ckube/ckube
}

summary() {
    sort -n | awk '{ v[NR] = $1 }
        END { printf "%s (%s-%s)", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR] }'
}

bench_install() {
    name=$1
    shift
    [ $# -gt 0 ] || return 0
    echo "$name: installing: $*"
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    # a package such as nginx would start a system service where policy allows; the
    # benchmarks start their own on random loopback ports and leave that one alone
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends "$@" \
        </dev/null >/dev/null
}
