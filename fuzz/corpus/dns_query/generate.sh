#!/bin/sh
# generate.sh - writes the seeds of fuzz_dns_query: queries built by ldns's drill (its -q
# writes the query it would send, as hex), turned into the message bytes with xxd. Run it
# from anywhere; it rewrites the *.bin files beside it.
#
# Usage: generate.sh   (needs drill from ldnsutils, and xxd)
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
seed() { # seed NAME DRILL-ARGS...
    name=$1; shift
    tmp=$(mktemp)
    drill -q "$tmp" "$@" >/dev/null
    sed 's/;.*//' "$tmp" | xxd -r -p >"$dir/$name.bin"
    rm -f "$tmp"
}
seed a web.default.svc.cluster.local A
seed aaaa web6.default.svc.cluster.local AAAA
seed headless db.default.svc.cluster.local A
seed hostname db-0.db.default.svc.cluster.local A
seed srv _http._tcp.web.default.svc.cluster.local SRV
seed srv-plain db.default.svc.cluster.local SRV
seed pod 10-1-2-3.default.pod.cluster.local A
seed ptr -x 10.96.0.20
seed ptr6 -x fd00::20
seed ext ext.default.svc.cluster.local A
seed cname ext.default.svc.cluster.local CNAME
seed soa cluster.local SOA
seed ns cluster.local NS
seed nsdns ns.dns.cluster.local A
seed txt dns-version.cluster.local TXT
seed nxdomain nope.default.svc.cluster.local A
seed mx web.default.svc.cluster.local MX
seed axfr cluster.local AXFR
seed forward example.com A
seed edns -b 4096 web.default.svc.cluster.local A
seed edns-do -D db.default.svc.cluster.local A
